import { connect, createInbox } from "@nats-io/transport-node";
import { jetstreamManager, jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
const nc = await connect({ servers: "127.0.0.1:14222" });
const jsm = await jetstreamManager(nc);
await jsm.streams.delete("T").catch(()=>{});
await jsm.streams.add({ name: "T", subjects: ["t.>"], retention: "workqueue" });
await jsm.consumers.add("T", { durable_name: "c", ack_policy: "explicit", filter_subject: "t.a", max_deliver: 2, ack_wait: 1e9 });
const js = jetstream(nc); const enc = new TextEncoder();
await js.publish("t.a", enc.encode("hello"), { msgID: "m1" });
nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.T.c", { callback: (e, m) => console.log("ADV", m.string()) });
const inbox = createInbox(); const q = [];
let wake; nc.subscribe(inbox, { callback: (e, m) => { q.push(m); wake?.(); } });
async function pull(body) { nc.publish("$JS.API.CONSUMER.MSG.NEXT.T.c", enc.encode(JSON.stringify(body)), { reply: inbox });
  while (!q.length) await new Promise(r => wake = r); return q.shift(); }
for (let i = 0; i < 4; i++) {
  const r = await pull({batch:1,no_wait:true});
  console.log(i, r.subject, r.reply, r.headers?.code, r.headers?.description, r.string());
  if (r.reply) nc.publish(r.reply, enc.encode("-NAK"));
  await new Promise(r => setTimeout(r, 50));
}
const t0=Date.now(); const r = await pull({batch:1,expires:5e8}); console.log("expires", r.headers?.code, Date.now()-t0);
await js.publish("t.a", enc.encode("two"));
const m = await pull({batch:1,no_wait:true}); console.log(m.reply);
const ackr = await nc.request(m.reply, enc.encode("+ACK"), {timeout:1000}); console.log("ack reply", ackr.data.length, ackr.headers?.code);
const ackr2 = await nc.request(m.reply, enc.encode("+ACK"), {timeout:1000}).catch(e=>e.message); console.log("ack2", ackr2?.data?.length ?? ackr2);
try { await nc.request("nobody.here", enc.encode("x"), {timeout: 500}); } catch (e) { console.log("req err", e.name, e.constructor.name, e.message); }
try { await js.publish("nostream.x", enc.encode("x")); } catch (e) { console.log("js pub err", e.name, e.message); }
const kvm = new Kvm(nc); const kv = await kvm.create("pres", { ttl: 2000 });
await kv.purge?.("a");
const r1 = await kv.create("a", enc.encode("1")); console.log("rev", r1);
try { await kv.create("a", enc.encode("1")); } catch (e) { console.log("kv create err", e.name, e.message, e.code, e.api_error); }
try { await kv.update("a", enc.encode("1"), 99); } catch (e) { console.log("kv upd err", e.name, e.message, e.code, e.api_error); }
console.log(await kv.get("zz"));
await kv.delete("a"); const g = await kv.get("a"); console.log("after delete", g?.operation, g?.revision);
console.log("create after delete", await kv.create("a", enc.encode("2")));
const keys = await kv.keys(); const ks=[]; for await (const k of keys) ks.push(k); console.log(ks);
console.log((await jsm.streams.info("T")).state.messages);
await nc.close();
