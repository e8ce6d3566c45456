package io.icereactor.reporter;

import static org.junit.jupiter.api.Assertions.fail;

import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.RetentionPolicy;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.iceberg.metrics.CommitMetrics;
import org.apache.iceberg.metrics.CommitMetricsResult;
import org.apache.iceberg.metrics.CommitReport;
import org.apache.iceberg.metrics.DefaultMetricsContext;
import org.apache.iceberg.metrics.ImmutableCommitReport;

/**
 * The real parts the tests use: a nats-server process with JetStream (REACTOR_NATS_SERVER, else
 * the one realparts/run and interop/run build into ~/.cache/reactor-realparts) and reactor's Go
 * decoder (REACTOR_DECODE_COMMIT, else built here with `go build ./interop/decodecommit`).
 */
final class TestSupport {
  static final String STREAM = "REACTOR_COMMITS";
  private static String decoder;

  private TestSupport() {}

  static String natsServerBinary() {
    String env = System.getenv("REACTOR_NATS_SERVER");
    if (env != null && !env.isEmpty()) {
      return env;
    }
    File cached =
        Paths.get(System.getProperty("user.home"), ".cache/reactor-realparts/bin/nats-server-v2.15.2").toFile();
    if (cached.canExecute()) {
      return cached.getPath();
    }
    fail("no nats-server: set REACTOR_NATS_SERVER (interop/run does), or run realparts/run once");
    return null;
  }

  static synchronized String decoder() throws Exception {
    if (decoder != null) {
      return decoder;
    }
    String env = System.getenv("REACTOR_DECODE_COMMIT");
    if (env != null && !env.isEmpty()) {
      decoder = env;
      return decoder;
    }
    String repo = System.getenv("REACTOR_REPO");
    if (repo == null) {
      repo = "..";
    }
    Path out = Paths.get("target", "decodecommit").toAbsolutePath();
    Process p =
        new ProcessBuilder("go", "build", "-o", out.toString(), "./interop/decodecommit")
            .directory(new File(repo))
            .inheritIO()
            .start();
    if (!p.waitFor(300, TimeUnit.SECONDS) || p.exitValue() != 0) {
      fail("go build ./interop/decodecommit failed; set REACTOR_DECODE_COMMIT");
    }
    decoder = out.toString();
    return decoder;
  }

  /** What reactor's decoder made of an event: exit status and output. */
  static final class Decoded {
    final int status;
    final String stdout;
    final String stderr;

    Decoded(int status, String stdout, String stderr) {
      this.status = status;
      this.stdout = stdout;
      this.stderr = stderr;
    }
  }

  static Decoded decode(byte[] event) throws Exception {
    Path in = Files.createTempFile("event", ".json");
    Path out = Files.createTempFile("decoded", ".json");
    Path err = Files.createTempFile("decoded", ".err");
    try {
      Files.write(in, event);
      Process p =
          new ProcessBuilder(decoder())
              .redirectInput(in.toFile())
              .redirectOutput(out.toFile())
              .redirectError(err.toFile())
              .start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        fail("decodecommit did not finish");
      }
      return new Decoded(
          p.exitValue(),
          new String(Files.readAllBytes(out), StandardCharsets.UTF_8),
          new String(Files.readAllBytes(err), StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(in);
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** A nats-server process with JetStream on a loopback port, its store in a directory. */
  static final class NatsServer implements AutoCloseable {
    final int port;
    final Path store;
    private Process process;

    NatsServer(int port, Path store) {
      this.port = port;
      this.store = store;
    }

    String url() {
      return "nats://127.0.0.1:" + port;
    }

    NatsServer start() throws Exception {
      Path log = store.resolveSibling("nats-server-" + port + ".log");
      process =
          new ProcessBuilder(
                  natsServerBinary(), "-a", "127.0.0.1", "-p", Integer.toString(port), "-js", "-sd", store.toString())
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
              .start();
      await(this::accepting, Duration.ofSeconds(30), "nats-server accepting on port " + port);
      return this;
    }

    private boolean accepting() {
      if (!process.isAlive()) {
        fail("nats-server exited with status " + process.exitValue() + "; see " + store.resolveSibling("nats-server-" + port + ".log"));
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return true;
      } catch (IOException e) {
        return false;
      }
    }

    void stop() throws InterruptedException {
      if (process != null && process.isAlive()) {
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor(20, TimeUnit.SECONDS);
        }
      }
    }

    /** reactor's commit stream, as reactor run creates it (triggers.EnsureStreams). */
    void createCommitStream() throws Exception {
      try (Connection nc = Nats.connect(url())) {
        JetStreamManagement jsm = nc.jetStreamManagement();
        jsm.addStream(
            StreamConfiguration.builder()
                .name(STREAM)
                .subjects("iceberg.commits.>")
                .retentionPolicy(RetentionPolicy.WorkQueue)
                .storageType(StorageType.File)
                .build());
      }
    }

    /** How many messages reactor's commit stream holds (0 when unreachable). */
    long streamCount() {
      try (Connection nc = Nats.connect(url())) {
        return nc.jetStreamManagement().getStreamInfo(STREAM).getStreamState().getMsgCount();
      } catch (Exception e) {
        return 0;
      }
    }

    /** Every message in reactor's commit stream, in order. */
    List<MessageInfo> commitStream() throws Exception {
      List<MessageInfo> out = new ArrayList<>();
      try (Connection nc = Nats.connect(url())) {
        JetStreamManagement jsm = nc.jetStreamManagement();
        long last = jsm.getStreamInfo(STREAM).getStreamState().getLastSequence();
        for (long seq = 1; seq <= last; seq++) {
          out.add(jsm.getMessage(STREAM, seq));
        }
      }
      return out;
    }

    @Override
    public void close() throws Exception {
      stop();
    }
  }

  /** Polls until cond holds; fails after limit (no timing is asserted: the limit only stops a hang). */
  static void await(BooleanSupplier cond, Duration limit, String what) {
    long until = System.nanoTime() + limit.toNanos();
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > until) {
        fail("not within " + limit.getSeconds() + " s: " + what);
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        fail("interrupted waiting for " + what);
      }
    }
  }

  static Map<String, String> props(String url, String... kv) {
    Map<String, String> m = new HashMap<>();
    m.put(ReporterConfig.URL, url);
    for (int i = 0; i + 1 < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  /** A CommitReport as Iceberg's SnapshotProducer builds one, from a snapshot summary. */
  static CommitReport report(String tableName, long snapshotId, Map<String, String> summary) {
    return ImmutableCommitReport.builder()
        .tableName(tableName)
        .snapshotId(snapshotId)
        .sequenceNumber(3)
        .operation("append")
        .metadata(Map.of("engine-name", "spark", "engine-version", "4.1.4", "iceberg-version", "test"))
        .commitMetrics(CommitMetricsResult.from(CommitMetrics.of(new DefaultMetricsContext()), summary))
        .build();
  }

  static CommitReport report(String tableName, long snapshotId) {
    return report(tableName, snapshotId, Map.of("added-data-files", "2", "added-records", "10", "total-records", "10"));
  }

  /** A port that accepts connections and never says a word: a NATS server hung, or a firewall. */
  static final class SilentServer implements AutoCloseable {
    private final ServerSocket socket;
    private final List<Socket> held = new ArrayList<>();
    private final Thread acceptor;

    SilentServer() throws IOException {
      socket = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
      acceptor =
          new Thread(
              () -> {
                while (!socket.isClosed()) {
                  try {
                    Socket s = socket.accept();
                    synchronized (held) {
                      held.add(s);
                    }
                  } catch (IOException e) {
                    return;
                  }
                }
              },
              "silent-server");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    String url() {
      return "nats://127.0.0.1:" + socket.getLocalPort();
    }

    @Override
    public void close() throws Exception {
      socket.close();
      synchronized (held) {
        for (Socket s : held) {
          s.close();
        }
      }
      acceptor.join(5000);
    }
  }
}
