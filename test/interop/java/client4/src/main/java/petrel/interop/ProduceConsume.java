package petrel.interop;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The official Java 4.x client against petrel: a DefaultMQProducer sends
 * count messages each synchronously, asynchronously, one way and as one
 * batch, tagged "a" or "b" with a key each; a clustering
 * DefaultMQPushConsumer subscribed to tag "a" receives them. Prints one
 * line per received message ("got KEY TAG BODY") and a summary line;
 * exits non-zero when a send fails or the consumer misses a message.
 *
 * Arguments: name server address, topic, group, count.
 */
public final class ProduceConsume {
    public static void main(String[] args) {
        Programs.run(args, ProduceConsume::run);
    }

    static void run(String[] args) throws Exception {
        String ns = args[0], topic = args[1], group = args[2];
        int count = Integer.parseInt(args[3]);

        Set<String> want = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(ns);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "a");
        Set<String> got = ConcurrentHashMap.newKeySet();
        AtomicReference<String> wrong = new AtomicReference<>();
        CountDownLatch all = new CountDownLatch(1);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                if (!"a".equals(m.getTags()) || !body.equals("body-" + m.getKeys())) {
                    wrong.compareAndSet(null, m.getKeys() + " " + m.getTags() + " " + body);
                }
                if (got.add(m.getKeys())) {
                    System.out.println("got " + m.getKeys() + " " + m.getTags() + " " + body);
                }
                if (got.containsAll(want)) { // the consumer starts once every send is done
                    all.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });

        DefaultMQProducer producer = new DefaultMQProducer(group + "-producer");
        producer.setNamesrvAddr(ns);
        // The client's 3 s default also counts the first route lookup, which a
        // loaded 2-core machine (CI runs the suites in parallel) can exceed.
        producer.setSendMsgTimeout(30_000);
        producer.start();
        int sent = 0;
        CountDownLatch async = new CountDownLatch(count);
        AtomicReference<Throwable> asyncErr = new AtomicReference<>();
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            for (String mode : new String[] {"sync", "async", "oneway", "batch"}) {
                String tag = i % 2 == 0 ? "a" : "b";
                String key = mode + "-" + i;
                Message m = new Message(topic, tag, key, ("body-" + key).getBytes(StandardCharsets.UTF_8));
                if (tag.equals("a")) {
                    want.add(key);
                }
                switch (mode) {
                    case "sync" -> {
                        SendResult r = producer.send(m);
                        if (r.getSendStatus() != SendStatus.SEND_OK || r.getMsgId() == null) {
                            throw new IllegalStateException("sync send " + key + ": " + r);
                        }
                        sent++;
                    }
                    case "async" -> producer.send(m, new SendCallback() {
                        public void onSuccess(SendResult r) { async.countDown(); }
                        public void onException(Throwable e) { asyncErr.compareAndSet(null, e); async.countDown(); }
                    });
                    case "oneway" -> producer.sendOneway(m);
                    default -> batch.add(m);
                }
            }
        }
        if (!async.await(30, TimeUnit.SECONDS) || asyncErr.get() != null) {
            throw new IllegalStateException("async sends did not all succeed", asyncErr.get());
        }
        SendResult br = producer.send(batch);
        if (br.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("batch send: " + br);
        }
        System.out.println("sent sync=" + sent + " async=" + count + " oneway=" + count + " batch=" + batch.size() + " want=" + want.size());

        consumer.start();
        boolean done = all.await(60, TimeUnit.SECONDS);
        consumer.shutdown();
        producer.shutdown();
        if (wrong.get() != null) {
            System.out.println("wrong " + wrong.get());
            System.exit(2);
        }
        if (!done) {
            Set<String> missing = ConcurrentHashMap.newKeySet();
            missing.addAll(want);
            missing.removeAll(got);
            System.out.println("missing " + missing);
            System.exit(3);
        }
        System.out.println("received " + got.size());
        System.exit(0);
    }
}
