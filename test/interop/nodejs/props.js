// What RocketMQ's proxy answers that the official Node.js client's own
// live tests look at. Usage: node props.js ENDPOINT TOPIC GROUP MISSING_TOPIC
// Prints one JSON object:
//   missing   the code and message a producer started for MISSING_TOPIC failed with
//   normal    the receipt of a normal send (messageId, transactionId)
//   txn       the receipt of a committed transactional send
//   received  the messages received and acked (id, body, messageGroup, properties)
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const logger = { info() {}, warn() {}, error() {}, debug() {}, trace() {} };

async function startFails(endpoints, topic) {
  const p = new Producer({ endpoints, namespace: '', logger, topics: [topic] });
  try {
    await p.startup();
  } catch (err) {
    // The client wraps the status error (startup, then its route retries).
    let cause = err;
    while (cause.cause && cause.code === undefined) {
      cause = cause.cause;
    }
    return { code: cause.code, message: String(cause.message) };
  } finally {
    await p.shutdown().catch(() => {});
  }
  return { code: 0, message: 'started' };
}

async function main() {
  const [endpoints, topic, group, missing] = process.argv.slice(2);
  const missingResult = await startFails(endpoints, missing);

  const consumer = new SimpleConsumer({
    endpoints, consumerGroup: group, namespace: '', logger,
    subscriptions: new Map().set(topic, '*'),
    awaitDuration: 2000,
  });
  await consumer.startup();
  const checker = { async check() { return 1; } }; // COMMIT, if ever asked
  const producer = new Producer({ endpoints, namespace: '', logger, maxAttempts: 3, topics: [topic], checker });
  await producer.startup();

  const normal = await producer.send({ topic, tag: 'normal', body: Buffer.from('normal') });
  await producer.send({ topic, tag: 'fifo', messageGroup: 'order-1', body: Buffer.from('fifo') });
  const tx = producer.beginTransaction();
  const txn = await producer.send({ topic, tag: 'txn', body: Buffer.from('txn') }, tx);
  await tx.commit();

  const received = [];
  const deadline = Date.now() + 30000;
  while (received.length < 3 && Date.now() < deadline) {
    const msgs = await consumer.receive(16, 20000);
    for (const m of msgs) {
      received.push({ id: m.messageId, body: m.body.toString(), messageGroup: m.messageGroup || '',
        properties: Object.fromEntries(m.properties) });
      await consumer.ack(m);
    }
  }

  await producer.shutdown();
  await consumer.shutdown();
  process.stdout.write(JSON.stringify({
    missing: missingResult,
    normal: { messageId: normal.messageId, transactionId: normal.transactionId },
    txn: { messageId: txn.messageId, transactionId: txn.transactionId },
    received,
  }) + '\n');
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`node client failed: ${err && err.stack || err}\n`);
  process.exit(1);
});
