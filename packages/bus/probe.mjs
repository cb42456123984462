import { connect, headers } from "@nats-io/transport-node";
import { jetstreamManager, jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
const nc = await connect({ servers: "127.0.0.1:14222" });
console.log(nc.info.version);
const jsm = await jetstreamManager(nc);
await jsm.streams.add({ name: "T", subjects: ["t.>"], retention: "workqueue" });
await jsm.consumers.add("T", { durable_name: "c", ack_policy: "explicit", filter_subject: "t.a", max_deliver: 2, ack_wait: 1e9 });
const js = jetstream(nc);
const enc = new TextEncoder();
try { const r = await nc.request("$JS.API.CONSUMER.MSG.NEXT.T.c", enc.encode(JSON.stringify({batch:1,no_wait:true})), {timeout: 2000});
  console.log("empty:", r.headers?.code, r.headers?.description, r.data.length);
} catch (e) { console.log("err", e.name, e.message, e.code); }
const h = headers(); h.set("x-a", "1");
console.log(await js.publish("t.a", enc.encode("hello"), { msgID: "m1", headers: h }));
console.log(await js.publish("t.a", enc.encode("hello"), { msgID: "m1" }));
const adv = nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.T.c", { callback: (e, m) => console.log("ADV", m.string()) });
for (let i = 0; i < 3; i++) {
  const r = await nc.request("$JS.API.CONSUMER.MSG.NEXT.T.c", enc.encode(JSON.stringify({batch:1,no_wait:true})), {timeout: 2000});
  console.log(i, r.subject, r.reply, r.headers?.code, r.headers?.get("x-a"), r.string());
  if (r.reply) { await nc.request(r.reply, enc.encode("-NAK"), {timeout: 1000}).then(x => console.log("nak reply", x.data.length)).catch(e=>console.log("nakerr", e.message)); }
  await new Promise(r => setTimeout(r, 100));
}
const r = await nc.request("$JS.API.CONSUMER.MSG.NEXT.T.c", enc.encode(JSON.stringify({batch:1,expires: 1e9})), {timeout: 3000});
console.log("expires:", r.headers?.code, r.headers?.description);
try { await nc.request("nobody.here", enc.encode("x"), {timeout: 500}); } catch (e) { console.log("req err", e.name, e.constructor.name, e.message, Object.keys(e)); }
const kvm = new Kvm(nc); const kv = await kvm.create("pres", { ttl: 2000 });
const r1 = await kv.create("a", enc.encode("1"));
try { await kv.create("a", enc.encode("1")); } catch (e) { console.log("kv create err", e.name, e.message, e.code, e.api_error); }
try { await kv.update("a", enc.encode("1"), 99); } catch (e) { console.log("kv upd err", e.name, e.message, e.code, e.api_error); }
console.log(await kv.get("zz"));
await kv.delete("a"); const g = await kv.get("a"); console.log("after delete", g?.operation, g?.revision);
console.log(await (await jsm.streams.info("T")).state);
await nc.close();
