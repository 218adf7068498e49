// Recalls a delayed message with the official Node.js client's
// Producer.recallMessage. Usage: node recall.js ENDPOINT TOPIC GROUP DELAY_MS
// Sends two messages due DELAY_MS from now, "recalled" (deliveryTimestamp)
// and "control" (delay), recalls the first by its receipt's recallHandle,
// tries a recall with a handle that is not one, then receives until the
// control message has arrived and for 3 s more. Prints one JSON object:
//   recalled, control  the send receipts (messageId, recallHandle)
//   recall             the recall receipt's messageId
//   bogus              the error a recall with a made-up handle failed with
//   received           the messages received and acked (id, body)
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const logger = { info() {}, warn() {}, error() {}, debug() {}, trace() {} };

async function main() {
  const [endpoints, topic, group, delayArg] = process.argv.slice(2);
  const delay = Number(delayArg);

  const consumer = new SimpleConsumer({
    endpoints, consumerGroup: group, namespace: '', logger,
    subscriptions: new Map().set(topic, '*'),
    awaitDuration: 2000,
  });
  await consumer.startup();
  const producer = new Producer({ endpoints, namespace: '', logger, maxAttempts: 3, topics: [topic] });
  await producer.startup();

  const recalled = await producer.send({ topic, tag: 'recall', body: Buffer.from('recalled'),
    deliveryTimestamp: new Date(Date.now() + delay) });
  const control = await producer.send({ topic, tag: 'recall', body: Buffer.from('control'), delay });
  const recall = await producer.recallMessage(topic, recalled.recallHandle);
  let bogus = '';
  try {
    await producer.recallMessage(topic, 'bm90IGEgaGFuZGxl');
    bogus = 'accepted';
  } catch (err) {
    bogus = String(err && err.message || err);
  }

  const received = [];
  let controlAt = 0;
  const deadline = Date.now() + delay + 30000;
  while (Date.now() < deadline && (controlAt === 0 || Date.now() < controlAt + 3000)) {
    const msgs = await consumer.receive(16, 20000);
    for (const m of msgs) {
      const body = m.body.toString();
      received.push({ id: m.messageId, body });
      if (body === 'control' && controlAt === 0) {
        controlAt = Date.now();
      }
      await consumer.ack(m);
    }
  }

  await producer.shutdown();
  await consumer.shutdown();
  process.stdout.write(JSON.stringify({
    recalled: { messageId: recalled.messageId, recallHandle: recalled.recallHandle || '' },
    control: { messageId: control.messageId, recallHandle: control.recallHandle || '' },
    recall: { messageId: recall.messageId },
    bogus,
    received,
  }) + '\n');
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`node client failed: ${err && err.stack || err}\n`);
  process.exit(1);
});
