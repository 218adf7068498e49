package petrel.interop;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * The official Java 5.x client (rocketmq-client-java, gRPC) against
 * petrel's gRPC endpoint: a Producer sends count messages tagged "a" or
 * "b"; a SimpleConsumer of tag "a" receives and acks exactly those; a
 * PushConsumer group of two members consumes those and count more sent
 * while it runs, each member some. Prints "ok DETAIL" and exits 0, or "fail WHY" and exits 2.
 *
 * Arguments: gRPC endpoint, topic, group, count.
 */
public final class Client5 {
    public static void main(String[] args) {
        try {
            System.out.println("ok " + run(args[0], args[1], args[2], Integer.parseInt(args[3])));
            System.out.flush();
            System.exit(0);
        } catch (Throwable e) {
            System.out.println("fail " + e);
            e.printStackTrace(System.out);
            System.out.flush();
            System.exit(2);
        }
    }

    static boolean bothTookPart(Map<String, Set<String>> byMember) {
        return byMember.values().stream().noneMatch(Set::isEmpty);
    }

    static String run(String endpoint, String topic, String group, int count) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(endpoint).enableSsl(true)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
        Set<String> tagged = new TreeSet<>();
        Set<String> all = new TreeSet<>();
        try (Producer producer = provider.newProducerBuilder().setClientConfiguration(cfg).setTopics(topic).build()) {
            for (int i = 0; i < count; i++) {
                String tag = i % 2 == 0 ? "a" : "b";
                String key = "k5-" + i;
                Message m = provider.newMessageBuilder().setTopic(topic).setTag(tag).setKeys(key)
                    .setBody(("body-" + key).getBytes(StandardCharsets.UTF_8)).build();
                SendReceipt r = producer.send(m);
                if (r.getMessageId() == null) {
                    throw new IllegalStateException("send " + key + ": no message id");
                }
                all.add(key);
                if (tag.equals("a")) {
                    tagged.add(key);
                }
            }
        }

        Set<String> simple = new TreeSet<>();
        try (SimpleConsumer sc = provider.newSimpleConsumerBuilder().setClientConfiguration(cfg)
            .setConsumerGroup(group + "-simple").setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("a", FilterExpressionType.TAG)))
            .build()) {
            long deadline = System.currentTimeMillis() + 60_000;
            while (!simple.containsAll(tagged) && System.currentTimeMillis() < deadline) {
                List<MessageView> got = sc.receive(16, Duration.ofSeconds(30));
                for (MessageView mv : got) {
                    String key = mv.getKeys().iterator().next();
                    if (!"a".equals(mv.getTag().orElse(""))) {
                        throw new IllegalStateException("simple consumer of tag a received " + key + " tagged " + mv.getTag());
                    }
                    String body = StandardCharsets.UTF_8.decode(mv.getBody()).toString();
                    if (!body.equals("body-" + key)) {
                        throw new IllegalStateException("simple consumer: body of " + key + " is " + body);
                    }
                    simple.add(key);
                    sc.ack(mv);
                }
            }
        }
        if (!simple.equals(tagged)) {
            throw new IllegalStateException("simple consumer received " + simple + ", want " + tagged);
        }

        Map<String, Set<String>> byMember = new ConcurrentHashMap<>();
        Set<String> pushed = ConcurrentHashMap.newKeySet();
        PushConsumer[] members = new PushConsumer[2];
        for (int i = 0; i < members.length; i++) {
            String name = "member" + i;
            Set<String> mine = ConcurrentHashMap.newKeySet();
            byMember.put(name, mine);
            members[i] = provider.newPushConsumerBuilder().setClientConfiguration(cfg).setConsumerGroup(group + "-push")
                .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
                .setMessageListener(mv -> {
                    String key = mv.getKeys().iterator().next();
                    mine.add(key);
                    pushed.add(key);
                    return ConsumeResult.SUCCESS;
                }).build();
        }
        // The members receive the messages sent before they started (one
        // may take them all: a receive takes up to a batch, and the other
        // may not be polling yet); then more arrive one at a time, each
        // going to whichever member waits: count of them, and after those
        // one every 100 ms until both members have had some (a member that
        // starts its polls late is not a failure of the group), at most
        // for 60 s.
        int sent = count;
        try (Producer producer = provider.newProducerBuilder().setClientConfiguration(cfg).setTopics(topic).build()) {
            long deadline = System.currentTimeMillis() + 60_000;
            for (int i = 0; i < count || (!bothTookPart(byMember) && System.currentTimeMillis() < deadline); i++) {
                String key = "p5-" + i;
                producer.send(provider.newMessageBuilder().setTopic(topic).setTag("c").setKeys(key)
                    .setBody(("body-" + key).getBytes(StandardCharsets.UTF_8)).build());
                all.add(key);
                sent++;
                if (i >= count) {
                    Thread.sleep(100);
                }
            }
        }
        long deadline = System.currentTimeMillis() + 90_000;
        while (!pushed.containsAll(all) && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        for (PushConsumer pc : members) {
            pc.close();
        }
        if (!pushed.containsAll(all)) {
            Set<String> missing = new TreeSet<>(all);
            missing.removeAll(pushed);
            throw new IllegalStateException("push consumers missed " + missing);
        }
        return "sent=" + sent + " simple=" + simple.size() + " push member0=" + byMember.get("member0").size()
            + " member1=" + byMember.get("member1").size();
    }
}
