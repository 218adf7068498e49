package petrel.interop;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Runs mqadmin commands one after the other in one JVM (a JVM per command
 * would cost a second or two each). Each line of standard input is the
 * seconds the command may run, then its command line, separated by tabs
 * (@@NOARGS as the command line: none, which prints the list of
 * commands); for each, what the command
 * printed (standard output and error together) is written back as
 *
 *   @@OUT BASE64
 *   @@END done|timeout MILLIS
 *
 * so that the caller can look at the broker between two commands. A
 * command still running after its seconds is left behind and reported as
 * timeout.
 */
public final class MQAdminBatch {
    public static void main(String[] args) throws Exception {
        PrintStream realOut = System.out;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            int tab = line.indexOf('\t');
            long timeoutMs = Long.parseLong(line.substring(0, tab)) * 1000;
            String rest = line.substring(tab + 1);
            String[] words = rest.equals("@@NOARGS") ? new String[0] : rest.split("\t", -1);
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            PrintStream capture = new PrintStream(buf, true, StandardCharsets.UTF_8);
            System.setOut(capture);
            System.setErr(capture);
            long start = System.nanoTime();
            Thread t = new Thread(() -> {
                try {
                    MQAdminStartup.main0(words, null);
                } catch (Throwable e) {
                    e.printStackTrace(capture);
                }
            }, "mqadmin");
            t.setDaemon(true);
            t.start();
            t.join(timeoutMs);
            String status = t.isAlive() ? "timeout" : "done";
            long ms = (System.nanoTime() - start) / 1_000_000;
            capture.flush();
            byte[] out;
            synchronized (buf) {
                out = buf.toByteArray();
            }
            realOut.println("@@OUT " + Base64.getEncoder().encodeToString(out));
            realOut.println("@@END " + status + " " + ms);
            realOut.flush();
        }
        realOut.flush();
        System.exit(0);
    }
}
