package petrel.interop;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.client.trace.TraceView;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

/**
 * Scenarios of the official Java 4.x client against petrel, one a run:
 *
 *   trace       a producer and a push consumer with enableMsgTrace send
 *               and consume one message; their trace records (Pub,
 *               SubBefore, SubAfter) reach RMQ_SYS_TRACE_TOPIC, found by
 *               a key query on the msgId and decoded by the client's own
 *               TraceView; prints the msgId for the test's CLI check;
 *               -Dpetrel.traceTopic=T gives both a customizedTraceTopic
 *   ordered     sends with a MessageQueueSelector by order id; an orderly
 *               push consumer sees each order's steps in order
 *   delay       a message of delay level 2 arrives no sooner than the level
 *   transaction a transactional producer: one commit, one rollback, one
 *               left unknown and committed by the check-back; only the
 *               committed two are consumed
 *   broadcast   two BROADCASTING consumers of one group each get every
 *               message
 *   sql         a SQL92 selector (a > 5 AND color = 'red') delivers exactly
 *               the matching messages
 *   retrydlq    a consumer that never succeeds (max 1 reconsume) sends the
 *               message to the retry topic, then to %DLQ%group, where a
 *               consumer of the DLQ reads it with its original key
 *   litepull    DefaultLitePullConsumer in assign mode with seek, and in
 *               subscribe mode
 *   compressed  a body over the 4 KiB compression threshold arrives whole
 *   cluster     three CLUSTERING push members of one group share the
 *               topic's queues (each holds some, none twice) and each
 *               message goes to one member; when one member leaves the
 *               other two take its queues and get every later message
 *
 * Arguments: scenario, name server address, topic, group. Prints "ok
 * SCENARIO DETAIL" and exits 0, or prints "fail SCENARIO WHY" and exits 2.
 * Before that it prints one "obs SCENARIO ..." line per thing the client
 * observed (each send's status, each delivery's topic, key, tags,
 * reconsume times, flag, body CRC and properties, and, where the queue is
 * chosen by the scenario, the queue and offset), which
 * differential_test.go compares between Petrel and Apache RocketMQ.
 */
public final class Scenarios {
    private static String ns, topic, group;
    // -Dpetrel.sendTimeoutMs: the producers' send timeout, 15 s unless set:
    // the client's 3 s default also counts the first route lookup, which a
    // loaded 2-core machine (CI runs the suites in parallel) can exceed.
    private static final int sendTimeoutMs = Integer.getInteger("petrel.sendTimeoutMs", 15_000);

    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        scenarioName = scenario;
        ns = args[1];
        topic = args[2];
        group = args[3];
        String detail;
        try {
            detail = switch (scenario) {
                case "trace" -> trace();
                case "ordered" -> ordered();
                case "delay" -> delay();
                case "transaction" -> transaction();
                case "broadcast" -> broadcast();
                case "sql" -> sql();
                case "retrydlq" -> retryDLQ();
                case "litepull" -> litePull();
                case "compressed" -> compressed();
                case "cluster" -> cluster();
                default -> throw new IllegalArgumentException("no scenario " + scenario);
            };
        } catch (Failure f) {
            System.out.println("fail " + scenario + " " + f.getMessage());
            System.out.flush();
            System.exit(2);
            return;
        } catch (Exception e) {
            // The client's threads would keep the JVM alive.
            System.out.println("fail " + scenario + " " + e);
            e.printStackTrace(System.out);
            System.out.flush();
            System.exit(2);
            return;
        }
        System.out.println("ok " + scenario + " " + detail);
        System.out.flush();
        System.exit(0);
    }

    static final class Failure extends Exception {
        Failure(String why) { super(why); }
    }

    static void check(boolean ok, String why) throws Failure {
        if (!ok) {
            throw new Failure(why);
        }
    }

    static DefaultMQProducer producer(String name) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(name);
        p.setNamesrvAddr(ns);
        p.setSendMsgTimeout(sendTimeoutMs);
        p.setInstanceName(name);
        p.start();
        return p;
    }

    static DefaultMQPushConsumer pushConsumer(String g, String instance) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(g);
        c.setNamesrvAddr(ns);
        c.setInstanceName(instance);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        return c;
    }

    static SendResult sendOK(DefaultMQProducer p, Message m) throws Exception {
        SendResult r = p.send(m);
        obs("send key=" + m.getKeys() + " status=" + r.getSendStatus());
        check(r.getSendStatus() == SendStatus.SEND_OK, "send " + m.getKeys() + ": " + r);
        return r;
    }

    private static String scenarioName = "";

    // obs prints one observation; lines from the listeners' threads may
    // interleave, so the comparison sorts them.
    static synchronized void obs(String what) {
        System.out.println("obs " + scenarioName + " " + what);
    }

    // recv observes a delivery: with where, its queue and offset too (only
    // where the scenario chose the queue: otherwise the producer's first
    // queue is random).
    static void recv(String who, MessageExt m, boolean where) {
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(m.getBody());
        StringBuilder b = new StringBuilder("recv ").append(who)
            .append(" topic=").append(m.getTopic())
            .append(" key=").append(m.getKeys())
            .append(" tags=").append(m.getTags())
            .append(" reconsume=").append(m.getReconsumeTimes())
            .append(" sysflag=").append(m.getSysFlag())
            .append(" crc=").append(Long.toHexString(crc.getValue()))
            .append(" bodycrc=").append(m.getBodyCRC());
        if (where) {
            b.append(" queue=").append(m.getQueueId()).append(" offset=").append(m.getQueueOffset());
        }
        b.append(" props=").append(new java.util.TreeMap<>(m.getProperties()));
        obs(b.toString());
    }

    static Message msg(String t, String tag, String key, String body) {
        return new Message(t, tag, key, body.getBytes(StandardCharsets.UTF_8));
    }

    static String body(MessageExt m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    static boolean await(CountDownLatch l, int seconds) throws InterruptedException {
        return l.await(seconds, TimeUnit.SECONDS);
    }

    // trace: one traced send and its traced consumption. The clients send
    // their trace records in the background, batched, so the check polls
    // the trace topic until the three records are there.
    static String trace() throws Exception {
        // -Dpetrel.traceTopic=T: the clients' customizedTraceTopic.
        String custom = System.getProperty("petrel.traceTopic", "");
        String traceTopic = custom.isEmpty() ? TopicValidator.RMQ_SYS_TRACE_TOPIC : custom;
        String pg = group + "-p";
        DefaultMQProducer p = custom.isEmpty() ? new DefaultMQProducer(pg, true) : new DefaultMQProducer(pg, true, custom);
        p.setNamesrvAddr(ns);
        p.setInstanceName(pg);
        // A cold JVM on a loaded machine can spend the default 3 s on the
        // first route lookup alone.
        p.setSendMsgTimeout(15_000);
        p.start();
        SendResult r = sendOK(p, msg(topic, "traced", "trace-key", "traced body"));
        String id = r.getMsgId();
        CountDownLatch got = new CountDownLatch(1);
        DefaultMQPushConsumer c = custom.isEmpty() ? new DefaultMQPushConsumer(group, true) : new DefaultMQPushConsumer(group, true, custom);
        c.setNamesrvAddr(ns);
        c.setInstanceName(group + "-c");
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                if (m.getMsgId().equals(id)) {
                    got.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        boolean done = await(got, 90);
        // Wait for the records while the clients run: their shutdown
        // hands the last batch to a sender it does not wait for.
        Set<String> seen = ConcurrentHashMap.newKeySet();
        String last = "";
        long deadline = System.currentTimeMillis() + 60_000;
        while (done && System.currentTimeMillis() < deadline
            && !(seen.contains("Pub " + pg) && seen.contains("SubBefore " + group) && seen.contains("SubAfter " + group + " success"))) {
            try {
                for (MessageExt m : p.queryMessage(traceTopic, id, 32, 0, Long.MAX_VALUE).getMessageList()) {
                    for (TraceView v : TraceView.decodeFromTraceTransData(id, m)) {
                        seen.add(v.getMsgType() + " " + v.getGroupName());
                        seen.add(v.getMsgType() + " " + v.getGroupName() + " " + v.getStatus());
                    }
                }
            } catch (Exception e) {
                last = e.toString(); // not there yet: no trace message has the key
            }
            Thread.sleep(200);
        }
        c.shutdown();
        p.shutdown();
        check(done, "the traced message was not consumed");
        check(seen.contains("Pub " + pg) && seen.contains("SubBefore " + group) && seen.contains("SubAfter " + group + " success"),
            "trace records seen: " + seen + " " + last);
        return "msgId=" + id + " producerGroup=" + pg + " consumerGroup=" + group + " traceTopic=" + traceTopic;
    }

    // ordered: 4 orders of 5 steps each, sent in an interleaved order, each
    // order pinned to one queue by its id.
    static String ordered() throws Exception {
        DefaultMQProducer p = producer(group + "-p");
        final int orders = 4, steps = 5;
        for (int s = 0; s < steps; s++) {
            for (int o = 0; o < orders; o++) {
                Message m = msg(topic, "o", "order" + o + "-" + s, "order" + o + " step" + s);
                SendResult r = p.send(m, (List<MessageQueue> mqs, Message mm, Object arg) -> mqs.get((Integer) arg % mqs.size()), o);
                obs("send key=" + m.getKeys() + " status=" + r.getSendStatus() + " queue=" + r.getMessageQueue().getQueueId() + " offset=" + r.getQueueOffset());
                check(r.getSendStatus() == SendStatus.SEND_OK, "ordered send: " + r);
            }
        }
        Map<String, List<Integer>> seen = new ConcurrentHashMap<>();
        Map<String, Integer> queueOf = new ConcurrentHashMap<>();
        List<String> wrong = new CopyOnWriteArrayList<>();
        CountDownLatch all = new CountDownLatch(orders * steps);
        DefaultMQPushConsumer c = pushConsumer(group, group + "-c");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                recv("orderly", m, true);
                String[] f = body(m).split(" step");
                List<Integer> l = seen.computeIfAbsent(f[0], k -> new CopyOnWriteArrayList<>());
                int step = Integer.parseInt(f[1]);
                if (l.size() != step) {
                    wrong.add(f[0] + " step " + step + " after " + l);
                }
                l.add(step);
                Integer q = queueOf.putIfAbsent(f[0], m.getQueueId());
                if (q != null && q != m.getQueueId()) {
                    wrong.add(f[0] + " on queues " + q + " and " + m.getQueueId());
                }
                all.countDown();
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        c.start();
        boolean done = await(all, 60);
        c.shutdown();
        p.shutdown();
        check(wrong.isEmpty(), "out of order: " + wrong);
        check(done, "received " + seen);
        return orders + " orders of " + steps + " steps in order";
    }

    // delay: level 2 (5 s with the default levels; the test passes its
    // own, printed by the check).
    static String delay() throws Exception {
        DefaultMQProducer p = producer(group + "-p");
        Message m = msg(topic, "d", "delayed", "later");
        m.setDelayTimeLevel(2);
        long sent = System.currentTimeMillis();
        sendOK(p, m);
        CountDownLatch got = new CountDownLatch(1);
        long[] at = new long[1];
        DefaultMQPushConsumer c = pushConsumer(group, group + "-c");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            at[0] = System.currentTimeMillis();
            recv("push", msgs.get(0), false);
            got.countDown();
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        boolean done = await(got, 60);
        c.shutdown();
        p.shutdown();
        check(done, "the delayed message did not arrive in 60 s");
        return "after_ms=" + (at[0] - sent);
    }

    static String transaction() throws Exception {
        TransactionMQProducer p = new TransactionMQProducer(group + "-tp");
        p.setNamesrvAddr(ns);
        p.setSendMsgTimeout(sendTimeoutMs);
        p.setInstanceName(group + "-tp");
        Set<String> checked = ConcurrentHashMap.newKeySet();
        p.setTransactionListener(new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message m, Object arg) {
                return switch (m.getKeys()) {
                    case "commit" -> LocalTransactionState.COMMIT_MESSAGE;
                    case "rollback" -> LocalTransactionState.ROLLBACK_MESSAGE;
                    default -> LocalTransactionState.UNKNOW;
                };
            }

            public LocalTransactionState checkLocalTransaction(MessageExt m) {
                if (checked.add(m.getKeys())) {
                    recv("check", m, false);
                }
                return "unknown".equals(m.getKeys()) ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
            }
        });
        p.start();
        for (String k : new String[] {"commit", "rollback", "unknown"}) {
            TransactionSendResult r = p.sendMessageInTransaction(msg(topic, "t", k, "tx-" + k), null);
            obs("send key=" + k + " status=" + r.getSendStatus() + " local=" + r.getLocalTransactionState());
            check(r.getSendStatus() == SendStatus.SEND_OK, "transactional send " + k + ": " + r);
        }
        Set<String> got = ConcurrentHashMap.newKeySet();
        CountDownLatch two = new CountDownLatch(2);
        DefaultMQPushConsumer c = pushConsumer(group, group + "-c");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                if (got.add(m.getKeys())) {
                    recv("push", m, false);
                    two.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        // The rollback was decided at the send, before the commit that a
        // check-back makes: were it delivered, it would be by now.
        boolean done = await(two, 90);
        c.shutdown();
        p.shutdown();
        check(done, "consumed " + got + ", want commit and unknown");
        check(!got.contains("rollback"), "the rolled-back message was consumed");
        check(checked.contains("unknown"), "no check-back of the unknown transaction (checked " + checked + ")");
        return "consumed=" + new java.util.TreeSet<>(got) + " checked=" + new java.util.TreeSet<>(checked);
    }

    static String broadcast() throws Exception {
        final int n = 6;
        List<Map<String, Boolean>> got = new ArrayList<>();
        List<DefaultMQPushConsumer> cs = new ArrayList<>();
        CountDownLatch all = new CountDownLatch(2 * n);
        for (int i = 0; i < 2; i++) {
            Map<String, Boolean> mine = new ConcurrentHashMap<>();
            got.add(mine);
            final String member = "member" + i;
            DefaultMQPushConsumer c = pushConsumer(group, group + "-b" + i);
            c.setMessageModel(MessageModel.BROADCASTING);
            c.subscribe(topic, "*");
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    if (mine.putIfAbsent(m.getKeys(), true) == null) {
                        recv(member, m, false);
                        all.countDown();
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c.start();
            cs.add(c);
        }
        DefaultMQProducer p = producer(group + "-p");
        for (int i = 0; i < n; i++) {
            sendOK(p, msg(topic, "b", "bc-" + i, "broadcast " + i));
        }
        boolean done = await(all, 60);
        for (DefaultMQPushConsumer c : cs) {
            c.shutdown();
        }
        p.shutdown();
        check(done, "member deliveries " + got.get(0).keySet() + " / " + got.get(1).keySet());
        return "both members got " + n;
    }

    static String sql() throws Exception {
        DefaultMQProducer p = producer(group + "-p");
        Set<String> want = ConcurrentHashMap.newKeySet();
        for (int i = 0; i < 10; i++) {
            String color = i % 2 == 0 ? "red" : "blue";
            Message m = msg(topic, "s", "sql-" + i, "sql " + i);
            m.putUserProperty("a", Integer.toString(i));
            m.putUserProperty("color", color);
            if (i > 5 && color.equals("red")) {
                want.add("sql-" + i);
            }
            sendOK(p, m);
        }
        Set<String> got = ConcurrentHashMap.newKeySet();
        List<String> wrong = new CopyOnWriteArrayList<>();
        CountDownLatch all = new CountDownLatch(want.size());
        DefaultMQPushConsumer c = pushConsumer(group, group + "-c");
        c.subscribe(topic, MessageSelector.bySql("a > 5 AND color = 'red'"));
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                if (!want.contains(m.getKeys())) {
                    wrong.add(m.getKeys());
                } else if (got.add(m.getKeys())) {
                    recv("push", m, false);
                    all.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        boolean done = await(all, 60);
        c.shutdown();
        p.shutdown();
        check(wrong.isEmpty(), "delivered beside the selector: " + wrong);
        check(done, "got " + got + ", want " + want);
        return "selected " + new java.util.TreeSet<>(got);
    }

    static String retryDLQ() throws Exception {
        DefaultMQProducer p = producer(group + "-p");
        sendOK(p, msg(topic, "r", "doomed", "never consumed"));
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer c = pushConsumer(group, group + "-c");
        c.setMaxReconsumeTimes(1);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                attempts.add(m.getReconsumeTimes());
                recv("push", m, false);
            }
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        c.start();
        CountDownLatch dead = new CountDownLatch(1);
        String[] dlqKey = new String[1];
        DefaultMQPushConsumer d = pushConsumer(group + "-dlq", group + "-d");
        d.subscribe("%DLQ%" + group, "*");
        d.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            dlqKey[0] = msgs.get(0).getKeys();
            if (dead.getCount() > 0) {
                recv("dlq", msgs.get(0), false);
            }
            dead.countDown();
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        // The DLQ topic exists once the first message goes there: start
        // its consumer when it does (the client needs a route).
        long deadline = System.currentTimeMillis() + 90_000;
        boolean started = false;
        while (System.currentTimeMillis() < deadline && dead.getCount() > 0) {
            if (!started && attempts.size() >= 2) {
                try {
                    d.start();
                    started = true;
                } catch (Exception e) {
                    // not routed yet
                }
            }
            dead.await(500, TimeUnit.MILLISECONDS);
        }
        c.shutdown();
        if (started) {
            d.shutdown();
        }
        p.shutdown();
        check(dead.getCount() == 0, "nothing reached %DLQ%" + group + " (attempts " + attempts + ")");
        check("doomed".equals(dlqKey[0]), "the DLQ holds " + dlqKey[0]);
        check(attempts.size() == 2 && attempts.get(0) == 0 && attempts.get(1) == 1, "reconsume times seen " + attempts + ", want [0, 1]");
        return "attempts=" + attempts + " dlq=" + dlqKey[0];
    }

    static String litePull() throws Exception {
        DefaultMQProducer p = producer(group + "-p");
        final int n = 8;
        for (int i = 0; i < n; i++) {
            sendOK(p, msg(topic, "l", "lite-" + i, "lite " + i));
        }
        // Assign mode: every queue, from the start, then seek back to the
        // first offset of one queue and read it again.
        DefaultLitePullConsumer a = new DefaultLitePullConsumer(group + "-assign");
        a.setNamesrvAddr(ns);
        a.setInstanceName(group + "-assign");
        a.setAutoCommit(false);
        a.start();
        Collection<MessageQueue> mqs = a.fetchMessageQueues(topic);
        a.assign(mqs);
        for (MessageQueue mq : mqs) {
            a.seek(mq, 0);
        }
        Map<String, MessageExt> got = new ConcurrentHashMap<>();
        long deadline = System.currentTimeMillis() + 60_000;
        while (got.size() < n && System.currentTimeMillis() < deadline) {
            for (MessageExt m : a.poll(1000)) {
                if (got.put(m.getKeys(), m) == null) {
                    recv("assign", m, false);
                }
            }
        }
        check(got.size() == n, "assign mode read " + got.keySet());
        MessageExt first = got.get("lite-0");
        MessageQueue mq0 = mqs.stream().filter(q -> q.getQueueId() == first.getQueueId()).findFirst().orElseThrow();
        a.seek(mq0, first.getQueueOffset());
        boolean again = false;
        deadline = System.currentTimeMillis() + 30_000;
        while (!again && System.currentTimeMillis() < deadline) {
            for (MessageExt m : a.poll(1000)) {
                again |= m.getKeys().equals("lite-0");
            }
        }
        a.shutdown();
        check(again, "after a seek to lite-0's offset it was not read again");

        // Subscribe mode: the group rebalances the queues to this member.
        DefaultLitePullConsumer s = new DefaultLitePullConsumer(group + "-sub");
        s.setNamesrvAddr(ns);
        s.setInstanceName(group + "-sub");
        s.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        s.subscribe(topic, "*");
        s.start();
        Set<String> sub = ConcurrentHashMap.newKeySet();
        deadline = System.currentTimeMillis() + 60_000;
        while (sub.size() < n && System.currentTimeMillis() < deadline) {
            for (MessageExt m : s.poll(1000)) {
                if (sub.add(m.getKeys())) {
                    recv("subscribe", m, false);
                }
            }
        }
        s.shutdown();
        p.shutdown();
        check(sub.size() == n, "subscribe mode read " + sub);
        return "assign=" + got.size() + " seek=again subscribe=" + sub.size();
    }

    static String compressed() throws Exception {
        DefaultMQProducer p = producer(group + "-p");
        char[] big = new char[64 * 1024];
        for (int i = 0; i < big.length; i++) {
            big[i] = (char) ('a' + i % 23);
        }
        String body = new String(big);
        sendOK(p, msg(topic, "z", "big", body));
        CountDownLatch got = new CountDownLatch(1);
        String[] seen = new String[1];
        int[] sysFlag = new int[1];
        DefaultMQPushConsumer c = pushConsumer(group, group + "-c");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            seen[0] = body(msgs.get(0));
            sysFlag[0] = msgs.get(0).getSysFlag();
            recv("push", msgs.get(0), false);
            got.countDown();
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        boolean done = await(got, 60);
        c.shutdown();
        p.shutdown();
        check(done, "the compressed message did not arrive");
        check(body.equals(seen[0]), "the body arrived changed (" + (seen[0] == null ? 0 : seen[0].length()) + " chars)");
        return "bytes=" + body.length() + " compressed_flag=" + ((sysFlag[0] & 1) != 0);
    }

    // held is the set of this topic's queues the member's rebalance holds
    // (the retry topic's queues left out).
    static Set<Integer> held(DefaultMQPushConsumer c) {
        Set<Integer> q = new java.util.TreeSet<>();
        for (MessageQueue mq : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet()) {
            if (mq.getTopic().equals(topic)) {
                q.add(mq.getQueueId());
            }
        }
        return q;
    }

    // settled waits until the members between them hold every one of the
    // topic's queues exactly once, each member at least one.
    static boolean settled(List<DefaultMQPushConsumer> members, int queues, int seconds) throws InterruptedException {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (System.currentTimeMillis() < deadline) {
            Set<Integer> all = new java.util.HashSet<>();
            int sum = 0;
            boolean each = true;
            for (DefaultMQPushConsumer c : members) {
                Set<Integer> h = held(c);
                each &= !h.isEmpty();
                sum += h.size();
                all.addAll(h);
            }
            if (each && sum == queues && all.size() == queues) {
                return true;
            }
            Thread.sleep(200); // polling the client's own state: nothing to await
        }
        return false;
    }

    // committed persists every member's consume offsets and waits until the
    // broker holds, for each of the topic's queues, an offset at the queue's
    // end: then a queue that changes hands is read from where its last
    // owner finished. (Without it RocketMQ's at-least-once rebalance may
    // deliver again what the last owner consumed but had not yet committed:
    // the Java client commits every 5 s and on release with a oneway
    // request that can arrive after the new owner asked.)
    static boolean committed(DefaultMQProducer p, List<DefaultMQPushConsumer> members, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        List<MessageQueue> mqs = new ArrayList<>(p.fetchPublishMessageQueues(topic));
        while (System.currentTimeMillis() < deadline) {
            for (DefaultMQPushConsumer c : members) {
                c.getDefaultMQPushConsumerImpl().persistConsumerOffset();
            }
            boolean all = true;
            for (MessageQueue mq : mqs) {
                long end = p.maxOffset(mq);
                long at = members.get(0).getDefaultMQPushConsumerImpl().getOffsetStore().readOffset(mq, ReadOffsetType.READ_FROM_STORE);
                all &= end == 0 || at >= end;
            }
            if (all) {
                return true;
            }
            Thread.sleep(200); // the commits are oneway: poll the broker's answer
        }
        return false;
    }

    static String cluster() throws Exception {
        final int members = 3, first = 30, later = 12;
        DefaultMQProducer p = producer(group + "-p");
        int queues = p.fetchPublishMessageQueues(topic).size();
        List<Map<String, Integer>> got = new ArrayList<>();
        List<DefaultMQPushConsumer> cs = new ArrayList<>();
        Map<String, Integer> owner = new ConcurrentHashMap<>();
        List<String> twice = new CopyOnWriteArrayList<>();
        CountDownLatch firstAll = new CountDownLatch(first);
        CountDownLatch laterAll = new CountDownLatch(later);
        for (int i = 0; i < members; i++) {
            final int me = i;
            Map<String, Integer> mine = new ConcurrentHashMap<>();
            got.add(mine);
            DefaultMQPushConsumer c = pushConsumer(group, group + "-m" + i);
            c.setMessageModel(MessageModel.CLUSTERING);
            c.subscribe(topic, "*");
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    String k = m.getKeys();
                    mine.merge(k, 1, Integer::sum);
                    Integer o = owner.putIfAbsent(k, me);
                    if (o != null) {
                        twice.add(k + " to members " + o + " and " + me);
                        continue;
                    }
                    (k.startsWith("later-") ? laterAll : firstAll).countDown();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c.start();
            cs.add(c);
        }
        check(settled(cs, queues, 60), "the three members never shared the " + queues + " queues: "
                + held(cs.get(0)) + " / " + held(cs.get(1)) + " / " + held(cs.get(2)));
        String shares = held(cs.get(0)) + "/" + held(cs.get(1)) + "/" + held(cs.get(2));
        for (int i = 0; i < first; i++) {
            sendOK(p, msg(topic, "c", "first-" + i, "first " + i));
        }
        boolean done = await(firstAll, 60);
        check(done, "of " + first + " messages the members got " + got.get(0).size() + "/" + got.get(1).size() + "/" + got.get(2).size());
        for (int i = 0; i < members; i++) {
            check(!got.get(i).isEmpty(), "member " + i + " got nothing (queues " + shares + ")");
        }
        String counts = got.get(0).size() + "/" + got.get(1).size() + "/" + got.get(2).size();

        // One member leaves: the other two take its queues, each from its
        // committed offset, so no message is delivered twice.
        check(committed(p, cs, 30), "the members' consume offsets never reached the queues' ends on the broker");
        cs.get(0).shutdown();
        List<DefaultMQPushConsumer> rest = cs.subList(1, members);
        check(settled(rest, queues, 60), "after member 0 left the other two hold " + held(cs.get(1)) + " / " + held(cs.get(2)));
        for (int i = 0; i < later; i++) {
            sendOK(p, msg(topic, "c", "later-" + i, "later " + i));
        }
        done = await(laterAll, 60);
        for (DefaultMQPushConsumer c : rest) {
            c.shutdown();
        }
        p.shutdown();
        check(done, "after member 0 left, of " + later + " later messages " + (later - laterAll.getCount()) + " arrived");
        for (String k : got.get(0).keySet()) {
            check(!k.startsWith("later-"), "the member that left got " + k);
        }
        check(twice.isEmpty(), "delivered to two members: " + twice);
        return "queues " + shares + ", members got " + counts + " of " + first + ", then the remaining two got all " + later;
    }
}
