// The official RocketMQ 5.x Node.js client's PushConsumer and a producer,
// for grpc_nodejs_test.go's clustering test. Two modes:
//
//   node push.js consume ENDPOINT TOPIC GROUP
//     Starts a PushConsumer of GROUP subscribed to TOPIC (every tag) and
//     prints one JSON line per event: {"event":"started"} once it is
//     running, then {"event":"message", id, body, tag, keys, properties,
//     type, deliveryTimestamp, attempt} per message consumed (each is
//     acknowledged, SUCCESS). It shuts down when its stdin closes and then
//     prints {"event":"stopped"}.
//
//   node push.js produce ENDPOINT TOPIC COUNT DELAY_MS
//     Sends COUNT normal messages (bodies push-0.., tag push, keys
//     key-N), then one message with a delivery timestamp DELAY_MS ahead
//     (body delayed), and prints {"sent":[ids], "delayed":{id, deliveryTimestamp}}.
//
// The client's MessageView does not keep the message type it was
// delivered with, so the consume mode wraps the class to record it from
// the system properties (system_properties.message_type).
'use strict';

const messageViewModule = require('rocketmq-client-nodejs/dist/message/MessageView');
const { MessageType } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const typeNames = Object.fromEntries(Object.entries(MessageType).map(([k, v]) => [v, k]));

class TypedMessageView extends messageViewModule.MessageView {
  constructor(message, ...rest) {
    super(message, ...rest);
    this.messageType = typeNames[message.getSystemProperties().getMessageType()] || 'UNKNOWN';
  }
}
messageViewModule.MessageView = TypedMessageView;

const { Producer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');

const logger = { info() {}, warn() {}, error() {}, debug() {}, trace() {} };

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function consume(endpoints, topic, group) {
  const consumer = new PushConsumer({
    endpoints, consumerGroup: group, namespace: '', logger,
    subscriptions: new Map().set(topic, '*'),
    messageListener: {
      consume(m) {
        emit({
          event: 'message', id: m.messageId, body: m.body.toString(), tag: m.tag || '', keys: m.keys,
          properties: Object.fromEntries(m.properties), type: m.messageType,
          deliveryTimestamp: m.deliveryTimestamp ? m.deliveryTimestamp.getTime() : 0,
          attempt: m.deliveryAttempt,
        });
        return ConsumeResult.SUCCESS;
      },
    },
  });
  await consumer.startup();
  emit({ event: 'started' });
  await new Promise((resolve) => {
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
    process.stdin.resume();
  });
  await consumer.shutdown();
  emit({ event: 'stopped' });
}

async function produce(endpoints, topic, count, delayMs) {
  const producer = new Producer({ endpoints, namespace: '', logger, maxAttempts: 3, topics: [topic] });
  await producer.startup();
  const sent = [];
  for (let i = 0; i < count; i++) {
    const receipt = await producer.send({
      topic, tag: 'push', keys: [`key-${i}`], properties: new Map().set('seq', String(i)),
      body: Buffer.from(`push-${i}`),
    });
    sent.push(receipt.messageId);
  }
  const at = new Date(Date.now() + delayMs);
  const receipt = await producer.send({ topic, tag: 'later', deliveryTimestamp: at, body: Buffer.from('delayed') });
  await producer.shutdown();
  emit({ sent, delayed: { id: receipt.messageId, deliveryTimestamp: at.getTime() } });
}

async function main() {
  const [mode, endpoints, topic, arg, delayArg] = process.argv.slice(2);
  if (mode === 'consume') {
    await consume(endpoints, topic, arg);
  } else if (mode === 'produce') {
    await produce(endpoints, topic, Number(arg), Number(delayArg));
  } else {
    throw new Error(`unknown mode ${mode}; use consume or produce`);
  }
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`node client failed: ${err && err.stack || err}\n`);
  process.exit(1);
});
