package petrel.interop;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.AckCallback;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.AckStatus;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PopCallback;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.client.consumer.PopStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.header.NotificationRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.NotificationResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.PeekMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PopMessageResponseHeader;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;

/**
 * The official Java 5.x remoting client (rocketmq-client 5.3.1) in pop
 * mode against petrel. Two parts, each on its own topic and group (both
 * created by the Go test):
 *
 * push: SET_MESSAGE_REQUEST_MODE POP on every master of the topic, then a
 * DefaultMQPushConsumer with setClientRebalance(false) (the broker's
 * QUERY_ASSIGNMENT assigns, in POP mode) receives every message sent,
 * each carrying POP_CK, and none again after its invisible time passed
 * (its ACK_MESSAGE took).
 *
 * api: MQClientAPIImpl's calls and Java's own header classes: PEEK_MESSAGE
 * sees the messages, POP_MESSAGE then takes them all, BATCH_ACK_MESSAGE
 * (batchAckMessageAsync over the POP_CKs) is OK, the same batch again is
 * not, and NOTIFICATION on the emptied topic answers hasMsg false after
 * its wait.
 *
 * Prints "ok push ..." and "ok api ..." lines; exits non-zero on any
 * failure.
 *
 * Arguments: name server address, push topic, push group, api topic, api
 * group, count.
 */
public final class PopScenario {
    private static final long TIMEOUT = 5000;

    public static void main(String[] args) throws Exception {
        String ns = args[0];
        int count = Integer.parseInt(args[5]);
        DefaultMQProducer producer = new DefaultMQProducer("PopScenarioProducer");
        producer.setNamesrvAddr(ns);
        // The client's 3 s default also counts the first route lookup, which a
        // loaded 2-core machine (CI runs the suites in parallel) can exceed.
        producer.setSendMsgTimeout(30_000);
        producer.start();
        try {
            MQClientAPIImpl api = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
            push(ns, producer, api, args[1], args[2], count);
            api(producer, api, args[3], args[4], count);
        } finally {
            producer.shutdown();
        }
        System.exit(0);
    }

    private static List<String> masters(MQClientAPIImpl api, String topic) throws Exception {
        TopicRouteData route = api.getTopicRouteInfoFromNameServer(topic, TIMEOUT);
        List<String> out = new ArrayList<>();
        for (BrokerData bd : route.getBrokerDatas()) {
            String addr = bd.getBrokerAddrs().get(0L);
            if (addr != null) {
                out.add(addr);
            }
        }
        if (out.isEmpty()) {
            throw new IllegalStateException("the route of " + topic + " lists no master: " + route);
        }
        return out;
    }

    private static void send(DefaultMQProducer producer, String topic, int count) throws Exception {
        for (int i = 0; i < count; i++) {
            Message m = new Message(topic, "t", "k" + i, ("body-k" + i).getBytes(StandardCharsets.UTF_8));
            if (producer.send(m).getSendStatus() != SendStatus.SEND_OK) {
                throw new IllegalStateException("send of k" + i + " was not SEND_OK");
            }
        }
    }

    private static void push(String ns, DefaultMQProducer producer, MQClientAPIImpl api, String topic, String group, int count) throws Exception {
        for (String addr : masters(api, topic)) {
            api.setMessageRequestMode(addr, topic, group, MessageRequestMode.POP, 0, TIMEOUT);
        }
        send(producer, topic, count);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(ns);
        consumer.setClientRebalance(false);
        consumer.setPopInvisibleTime(5000);
        consumer.subscribe(topic, "*");
        Map<String, AtomicInteger> got = new ConcurrentHashMap<>();
        AtomicReference<String> wrong = new AtomicReference<>();
        CountDownLatch all = new CountDownLatch(count);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                if (m.getProperty(MessageConst.PROPERTY_POP_CK) == null || !body.equals("body-" + m.getKeys())) {
                    wrong.compareAndSet(null, m.getKeys() + " POP_CK=" + m.getProperty(MessageConst.PROPERTY_POP_CK) + " body=" + body);
                }
                if (got.computeIfAbsent(m.getKeys(), k -> new AtomicInteger()).incrementAndGet() == 1) {
                    all.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            if (!all.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the pop-mode push consumer received " + got.size() + " of " + count + " messages in 60s: " + got.keySet());
            }
            // Past the invisible time (5 s): an ack that did not take
            // would show as a second delivery.
            Thread.sleep(8000);
        } finally {
            consumer.shutdown();
        }
        if (wrong.get() != null) {
            throw new IllegalStateException("a message came without POP_CK or with a wrong body: " + wrong.get());
        }
        for (Map.Entry<String, AtomicInteger> e : got.entrySet()) {
            if (e.getValue().get() != 1) {
                throw new IllegalStateException(e.getKey() + " was delivered " + e.getValue().get() + " times; its ack did not take");
            }
        }
        System.out.println("ok push received=" + got.size() + " once each");
    }

    private static void api(DefaultMQProducer producer, MQClientAPIImpl api, String topic, String group, int count) throws Exception {
        String addr = masters(api, topic).get(0);
        send(producer, topic, count);

        PeekMessageRequestHeader ph = new PeekMessageRequestHeader();
        ph.setConsumerGroup(group);
        ph.setTopic(topic);
        ph.setQueueId(-1);
        ph.setMaxMsgNums(32);
        RemotingCommand peek = api.getRemotingClient().invokeSync(addr, RemotingCommand.createRequestCommand(RequestCode.PEEK_MESSAGE, ph), TIMEOUT);
        PopMessageResponseHeader peekHead = (PopMessageResponseHeader) peek.decodeCommandCustomHeader(PopMessageResponseHeader.class);
        if (peek.getCode() != ResponseCode.SUCCESS || peekHead.getRestNum() != count) {
            throw new IllegalStateException("peek: code " + peek.getCode() + " " + peek.getRemark() + ", restNum " + peekHead.getRestNum() + ", want " + count);
        }

        List<MessageExt> popped = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 30000;
        while (popped.size() < count && System.currentTimeMillis() < deadline) {
            PopMessageRequestHeader h = new PopMessageRequestHeader();
            h.setConsumerGroup(group);
            h.setTopic(topic);
            h.setQueueId(-1);
            h.setMaxMsgNums(32);
            h.setInvisibleTime(60000);
            h.setPollTime(1000);
            h.setBornTime(System.currentTimeMillis());
            h.setInitMode(0);
            h.setExpType("TAG");
            h.setExp("*");
            CompletableFuture<PopResult> res = new CompletableFuture<>();
            api.popMessageAsync(brokerName(api, topic), addr, h, TIMEOUT + 1000, new PopCallback() {
                @Override
                public void onSuccess(PopResult r) {
                    res.complete(r);
                }

                @Override
                public void onException(Throwable e) {
                    res.completeExceptionally(e);
                }
            });
            PopResult r = res.get(TIMEOUT + 2000, TimeUnit.MILLISECONDS);
            if (r.getPopStatus() == PopStatus.FOUND) {
                popped.addAll(r.getMsgFoundList());
            }
        }
        if (popped.size() != count) {
            throw new IllegalStateException("popped " + popped.size() + " of " + count + " messages");
        }
        List<String> cks = new ArrayList<>();
        for (MessageExt m : popped) {
            cks.add(m.getProperty(MessageConst.PROPERTY_POP_CK));
        }
        AckStatus first = batchAck(api, addr, topic, group, cks);
        AckStatus again = batchAck(api, addr, topic, group, cks);
        if (first != AckStatus.OK || again == AckStatus.OK) {
            throw new IllegalStateException("batch ack: " + first + ", the same batch again: " + again + "; want OK, then not OK");
        }

        NotificationRequestHeader nh = new NotificationRequestHeader();
        nh.setConsumerGroup(group);
        nh.setTopic(topic);
        nh.setQueueId(-1);
        nh.setPollTime(500);
        nh.setBornTime(System.currentTimeMillis());
        long start = System.currentTimeMillis();
        RemotingCommand note = api.getRemotingClient().invokeSync(addr, RemotingCommand.createRequestCommand(RequestCode.NOTIFICATION, nh), TIMEOUT);
        long waited = System.currentTimeMillis() - start;
        NotificationResponseHeader noteHead = (NotificationResponseHeader) note.decodeCommandCustomHeader(NotificationResponseHeader.class);
        if (note.getCode() != ResponseCode.SUCCESS || noteHead.isHasMsg() || waited < 400) {
            throw new IllegalStateException("notification on the emptied topic: code " + note.getCode() + " hasMsg " + noteHead.isHasMsg() + " after " + waited + " ms");
        }
        System.out.println("ok api peeked=" + count + " popped=" + popped.size() + " batch_ack=" + first + " again=" + again + " notification_waited_ms=" + waited);
    }

    private static String brokerName(MQClientAPIImpl api, String topic) throws Exception {
        return api.getTopicRouteInfoFromNameServer(topic, TIMEOUT).getBrokerDatas().get(0).getBrokerName();
    }

    private static AckStatus batchAck(MQClientAPIImpl api, String addr, String topic, String group, List<String> cks) throws Exception {
        CompletableFuture<AckResult> res = new CompletableFuture<>();
        api.batchAckMessageAsync(addr, TIMEOUT, new AckCallback() {
            @Override
            public void onSuccess(AckResult r) {
                res.complete(r);
            }

            @Override
            public void onException(Throwable e) {
                res.completeExceptionally(e);
            }
        }, topic, group, cks);
        return res.get(TIMEOUT + 2000, TimeUnit.MILLISECONDS).getStatus();
    }
}
