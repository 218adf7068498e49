package petrel.interop;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * The Java 5.x client's credentials (StaticSessionCredentialsProvider: the
 * client signs each call's authorization metadata) against a petrel
 * server run with --auth: a Producer and a SimpleConsumer with the right
 * secret send, receive and ack count messages; a Producer with a wrong
 * secret is refused.
 *
 * Arguments: gRPC endpoint, topic, group, access key, secret, count.
 * Prints "ok sent=N received=N wrong=EXCEPTION" and exits 0, or "fail WHY"
 * and exits 2.
 */
public final class Acl5 {
    public static void main(String[] args) {
        try {
            System.out.println("ok " + run(args[0], args[1], args[2], args[3], args[4], Integer.parseInt(args[5])));
            System.out.flush();
            System.exit(0);
        } catch (Throwable e) {
            System.out.println("fail " + e);
            e.printStackTrace(System.out);
            System.out.flush();
            System.exit(2);
        }
    }

    static ClientConfiguration config(String endpoint, String user, String secret) {
        return ClientConfiguration.newBuilder().setEndpoints(endpoint).enableSsl(true)
            .setCredentialProvider(new StaticSessionCredentialsProvider(user, secret))
            .setRequestTimeout(Duration.ofSeconds(10)).build();
    }

    static String run(String endpoint, String topic, String group, String user, String secret, int count) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration good = config(endpoint, user, secret);
        Set<String> sent = new TreeSet<>();
        try (Producer p = provider.newProducerBuilder().setClientConfiguration(good).setTopics(topic).build()) {
            for (int i = 0; i < count; i++) {
                String key = "acl5-" + i;
                p.send(provider.newMessageBuilder().setTopic(topic).setKeys(key)
                    .setBody(key.getBytes(StandardCharsets.UTF_8)).build());
                sent.add(key);
            }
        }
        Set<String> got = new TreeSet<>();
        try (SimpleConsumer sc = provider.newSimpleConsumerBuilder().setClientConfiguration(good)
            .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL)).build()) {
            long deadline = System.currentTimeMillis() + 60_000;
            while (!got.containsAll(sent) && System.currentTimeMillis() < deadline) {
                List<MessageView> views = sc.receive(16, Duration.ofSeconds(30));
                for (MessageView mv : views) {
                    mv.getKeys().forEach(got::add);
                    sc.ack(mv);
                }
            }
        }
        if (!got.containsAll(sent)) {
            throw new IllegalStateException("the signed simple consumer got " + got.size() + " of " + sent.size());
        }

        String wrong;
        ClientConfiguration bad = config(endpoint, user, secret + "-wrong");
        try (Producer p = provider.newProducerBuilder().setClientConfiguration(bad).setTopics(topic).build()) {
            p.send(provider.newMessageBuilder().setTopic(topic).setKeys("wrong")
                .setBody("wrong".getBytes(StandardCharsets.UTF_8)).build());
            throw new IllegalStateException("a send with a wrong secret was accepted");
        } catch (Exception e) {
            // The refusal comes at build (the producer's route query) or at
            // the send, wrapped in the client's start-up exceptions: name
            // the innermost ClientException.
            Throwable found = null;
            for (Throwable c = e; c != null; c = c.getCause()) {
                if (c instanceof ClientException) {
                    found = c;
                }
            }
            if (found == null) {
                throw e;
            }
            wrong = found.getClass().getSimpleName();
        }
        return "sent=" + sent.size() + " received=" + got.size() + " wrong=" + wrong;
    }
}
