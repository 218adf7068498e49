package petrel.interop;

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Request-reply with the official Java 4.x client against petrel: a
 * DefaultMQPushConsumer answers every request with
 * MessageUtil.createReplyMessage, sent by a producer of its own client
 * instance; a requester in another client instance sends count requests
 * with request() and count with request(callback). Every reply must carry
 * its request's correlation id and the body "reply to BODY". Prints
 * "sync N", "async N" (requests whose reply matched) and "failures F"
 * (replies the replier could not send); exits non-zero on a wrong or
 * missing reply.
 *
 * Arguments: name server address, topic, group, count.
 */
public final class RequestReply {
    private static final long TIMEOUT_MS = 30_000;

    private static String body(Message m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    public static void main(String[] args) {
        Programs.run(args, RequestReply::run);
    }

    static void run(String[] args) throws Exception {
        String ns = args[0], topic = args[1], group = args[2];
        int count = Integer.parseInt(args[3]);

        DefaultMQProducer replies = new DefaultMQProducer(group + "-replier");
        replies.setNamesrvAddr(ns);
        replies.setInstanceName("replier");
        // The client's 3 s default also counts the first route lookup, which a
        // loaded 2-core machine (CI runs the suites in parallel) can exceed.
        replies.setSendMsgTimeout(30_000);
        replies.start();
        AtomicInteger failures = new AtomicInteger();
        AtomicReference<String> firstFailure = new AtomicReference<>();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(ns);
        consumer.setInstanceName("replier");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                try {
                    Message reply = MessageUtil.createReplyMessage(m, ("reply to " + body(m)).getBytes(StandardCharsets.UTF_8));
                    replies.send(reply, 3000);
                } catch (Exception e) {
                    failures.incrementAndGet();
                    firstFailure.compareAndSet(null, body(m) + ": " + e);
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer requester = new DefaultMQProducer(group + "-requester");
        requester.setNamesrvAddr(ns);
        requester.setInstanceName("requester");
        requester.setSendMsgTimeout(30_000);
        requester.start();

        int sync = 0;
        for (int i = 0; i < count; i++) {
            Message req = new Message(topic, ("sync-" + i).getBytes(StandardCharsets.UTF_8));
            Message reply = requester.request(req, TIMEOUT_MS);
            String corr = req.getProperty(MessageConst.PROPERTY_CORRELATION_ID);
            if (reply == null || corr == null || !corr.equals(reply.getProperty(MessageConst.PROPERTY_CORRELATION_ID))
                || !body(reply).equals("reply to sync-" + i)) {
                System.out.println("wrong sync-" + i + " " + (reply == null ? "no reply" : body(reply)));
                System.exit(2);
            }
            sync++;
        }
        System.out.println("sync " + sync);

        Set<Integer> async = ConcurrentHashMap.newKeySet();
        AtomicReference<String> wrong = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(count);
        for (int i = 0; i < count; i++) {
            int n = i;
            String want = "reply to async-" + i;
            Message req = new Message(topic, ("async-" + i).getBytes(StandardCharsets.UTF_8));
            requester.request(req, new RequestCallback() {
                // The 4.9.8 client also calls onSuccess when the request's
                // send is acknowledged, with the reply if it came first
                // (twice for one reply, then) and with null if not yet.
                public void onSuccess(Message reply) {
                    if (reply == null) {
                        return;
                    }
                    String corr = req.getProperty(MessageConst.PROPERTY_CORRELATION_ID);
                    if (corr == null || !corr.equals(reply.getProperty(MessageConst.PROPERTY_CORRELATION_ID)) || !body(reply).equals(want)) {
                        wrong.compareAndSet(null, want + " got " + body(reply));
                        done.countDown();
                    } else if (async.add(n)) {
                        done.countDown();
                    }
                }

                public void onException(Throwable e) {
                    wrong.compareAndSet(null, want + ": " + e);
                    done.countDown();
                }
            }, TIMEOUT_MS);
        }
        boolean all = done.await(TIMEOUT_MS * 2, TimeUnit.MILLISECONDS);
        System.out.println("async " + async.size());
        System.out.println("failures " + failures.get());
        requester.shutdown();
        consumer.shutdown();
        replies.shutdown();
        if (wrong.get() != null) {
            System.out.println("wrong " + wrong.get());
            System.exit(2);
        }
        if (!all) {
            System.out.println("missing " + (count - async.size()));
            System.exit(3);
        }
        if (failures.get() > 0) {
            System.out.println("first failure " + firstFailure.get());
            System.exit(4);
        }
        System.exit(0);
    }
}
