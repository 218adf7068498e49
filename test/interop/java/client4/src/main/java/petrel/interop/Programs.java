package petrel.interop;

/**
 * Programs runs a program's body and exits the JVM on an uncaught failure,
 * which the RocketMQ client's non-daemon threads would otherwise keep
 * alive until the test kills it.
 */
final class Programs {
    private Programs() {}

    interface Body {
        void run(String[] args) throws Exception;
    }

    static void run(String[] args, Body body) {
        try {
            body.run(args);
        } catch (Throwable e) {
            e.printStackTrace();
            System.exit(9);
        }
    }
}
