import { connect } from "@nats-io/transport-node";
import { jetstreamManager, jetstream } from "@nats-io/jetstream";
const nc = await connect({ servers: "127.0.0.1:14222" });
const jsm = await jetstreamManager(nc);
console.log(await jsm.consumers.info("T","c").then(i=>[i.num_pending, i.num_ack_pending, i.delivered]));
const enc = new TextEncoder();
for (const body of [{batch:1,no_wait:true},{batch:1,expires:5e8}]) {
  for (const noMux of [false,true]) {
  try { const r = await nc.request("$JS.API.CONSUMER.MSG.NEXT.T.c", enc.encode(JSON.stringify(body)), {timeout: 2000, noMux});
  console.log(JSON.stringify(body), noMux, r.subject, r.reply, r.headers?.code, r.string());
  } catch(e) { console.log(JSON.stringify(body), noMux, "ERR", e.message); }
  }
}
await nc.close();
