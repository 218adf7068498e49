package petrel.interop;

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListSet;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * The Java 4.x client's ACL hook (rocketmq-acl's AclClientRPCHook, which
 * signs every request with the access key and an HMAC of its fields)
 * against a petrel server run with --auth: a producer and a push consumer
 * signing with the right secret send and consume count messages; a
 * producer signing with a wrong secret and one that does not sign are
 * refused with NO_PERMISSION (16).
 *
 * Arguments: name server address, topic, group, access key, secret, count.
 * Prints "ok sent=N consumed=N wrong=CODE unsigned=CODE" and exits 0, or
 * "fail WHY" and exits 2.
 */
public final class Acl {
    public static void main(String[] args) {
        try {
            System.out.println("ok " + run(args[0], args[1], args[2], args[3], args[4], Integer.parseInt(args[5])));
            System.out.flush();
            System.exit(0);
        } catch (Throwable e) {
            System.out.println("fail " + e);
            e.printStackTrace(System.out);
            System.out.flush();
            System.exit(2); // the client's threads would keep the JVM alive
        }
    }

    static RPCHook hook(String user, String secret) {
        return new AclClientRPCHook(new SessionCredentials(user, secret));
    }

    static DefaultMQProducer producer(String ns, String name, RPCHook h) throws MQClientException {
        DefaultMQProducer p = h == null ? new DefaultMQProducer(name) : new DefaultMQProducer(name, h);
        p.setNamesrvAddr(ns);
        p.setInstanceName(name);
        p.setRetryTimesWhenSendFailed(0);
        // The client's 3 s default counts its first route lookup too, which a
        // loaded 2-core machine (CI runs the suites in parallel) can exceed;
        // a refusal answers at once whatever the timeout.
        p.setSendMsgTimeout(30_000);
        p.start();
        return p;
    }

    // refusal sends one message that must be refused, and returns the
    // response code the client reports for it.
    static int refusal(DefaultMQProducer p, String topic, String what) throws Exception {
        try {
            SendResult r = p.send(new Message(topic, "t", what, what.getBytes(StandardCharsets.UTF_8)));
            throw new IllegalStateException("the " + what + " send was accepted: " + r);
        } catch (MQBrokerException e) {
            return e.getResponseCode();
        } catch (MQClientException e) {
            for (Throwable c = e; c != null; c = c.getCause()) {
                if (c instanceof MQBrokerException b) {
                    return b.getResponseCode();
                }
                if (c instanceof MQClientException m && m.getResponseCode() > 0) {
                    return m.getResponseCode();
                }
            }
            throw new IllegalStateException("the " + what + " send failed without a response code", e);
        } finally {
            p.shutdown();
        }
    }

    static String run(String ns, String topic, String group, String user, String secret, int count) throws Exception {
        DefaultMQProducer p = producer(ns, group + "-p", hook(user, secret));
        Set<String> sent = new TreeSet<>();
        for (int i = 0; i < count; i++) {
            String key = "acl-" + i;
            SendResult r = p.send(new Message(topic, "t", key, key.getBytes(StandardCharsets.UTF_8)));
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw new IllegalStateException("send " + key + ": " + r);
            }
            sent.add(key);
        }
        p.shutdown();

        Set<String> got = new ConcurrentSkipListSet<>();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, hook(user, secret), new AllocateMessageQueueAveragely());
        c.setNamesrvAddr(ns);
        c.setInstanceName(group + "-c");
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.add(m.getKeys());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        long deadline = System.currentTimeMillis() + 60_000;
        while (!got.containsAll(sent) && System.currentTimeMillis() < deadline) {
            Thread.sleep(100); // polling the listener's set: the client offers nothing to await
        }
        c.shutdown();
        if (!got.containsAll(sent)) {
            throw new IllegalStateException("the signed push consumer got " + got.size() + " of " + sent.size());
        }

        int wrong = refusal(producer(ns, group + "-wrong", hook(user, secret + "-wrong")), topic, "wrong-secret");
        int unsigned = refusal(producer(ns, group + "-unsigned", null), topic, "unsigned");
        return "sent=" + sent.size() + " consumed=" + got.size() + " wrong=" + wrong + " unsigned=" + unsigned;
    }
}
