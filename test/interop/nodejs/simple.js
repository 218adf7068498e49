// Produce, receive and acknowledge with the official RocketMQ 5.x Node.js
// client. Usage: node simple.js ENDPOINT TOPIC GROUP COUNT
// Prints one JSON object: the ids sent, the messages received and acked,
// and what a receive after the acknowledgements returned.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

async function main() {
  const [endpoints, topic, group, countArg] = process.argv.slice(2);
  const count = Number(countArg);
  const logger = { info() {}, warn() {}, error() {}, debug() {}, trace() {} };
  const consumer = new SimpleConsumer({
    endpoints, consumerGroup: group, namespace: '', logger,
    subscriptions: new Map().set(topic, 'node'),
    awaitDuration: 2000,
  });
  await consumer.startup();
  const producer = new Producer({ endpoints, namespace: '', logger, maxAttempts: 3 });
  await producer.startup();

  const sent = [];
  for (let i = 0; i < count; i++) {
    const receipt = await producer.send({
      topic, tag: 'node', keys: [`key-${i}`],
      body: Buffer.from(`node-${i}`),
    });
    sent.push(receipt.messageId);
  }
  // Not ours: a tag the subscription does not ask for.
  await producer.send({ topic, tag: 'other', body: Buffer.from('filtered') });

  const received = [];
  const deadline = Date.now() + 30000;
  while (received.length < count && Date.now() < deadline) {
    const msgs = await consumer.receive(16, 20000);
    for (const m of msgs) {
      received.push({ id: m.messageId, body: m.body.toString(), tag: m.tag, keys: m.keys, attempt: m.deliveryAttempt });
      await consumer.ack(m);
    }
  }
  // Everything is acknowledged: nothing may come back.
  const after = await consumer.receive(16, 20000);

  await producer.shutdown();
  await consumer.shutdown();
  process.stdout.write(JSON.stringify({ sent, received, after: after.length }) + '\n');
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`node client failed: ${err && err.stack || err}\n`);
  process.exit(1);
});
