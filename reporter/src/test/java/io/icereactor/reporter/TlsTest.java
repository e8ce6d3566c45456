package io.icereactor.reporter;

import static io.icereactor.reporter.TestSupport.await;
import static io.icereactor.reporter.TestSupport.props;
import static io.icereactor.reporter.TestSupport.report;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS with the PEM files of reactor.nats.tls.*: a nats-server that requires a client
 * certificate (verify), certificates made by openssl for this test. Without the client
 * certificate the same server refuses the reporter, and the event is counted failed.
 */
class TlsTest {
  @TempDir Path dir;

  private void openssl(String... args) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add("openssl");
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(dir.resolve("openssl.log").toFile()).start();
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      fail("openssl " + String.join(" ", args) + " failed: " + Files.readString(dir.resolve("openssl.log")));
    }
  }

  private void certificates() throws Exception {
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=reactor-test-ca");
    Files.writeString(dir.resolve("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1");
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "server.ext");
    // An EC client key, written as PKCS#8 ("BEGIN PRIVATE KEY"), the form the reporter reads.
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "client-ec.key");
    openssl("pkcs8", "-topk8", "-nocrypt", "-in", "client-ec.key", "-out", "client.key");
    openssl("req", "-new", "-key", "client.key", "-out", "client.csr", "-subj", "/CN=reporter");
    openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "client.pem", "-days", "2");
  }

  @Test
  void publishesOverMutualTls() throws Exception {
    certificates();
    int port = TestSupport.freePort();
    Path conf = dir.resolve("nats.conf");
    Files.writeString(conf, String.join("\n",
        "listen: 127.0.0.1:" + port,
        "jetstream { store_dir: \"" + dir.resolve("js") + "\" }",
        "tls { cert_file: \"" + dir.resolve("server.pem") + "\", key_file: \"" + dir.resolve("server.key") + "\",",
        "      ca_file: \"" + dir.resolve("ca.pem") + "\", verify: true }", ""));
    Process server = new ProcessBuilder(TestSupport.natsServerBinary(), "-c", conf.toString())
        .redirectErrorStream(true).redirectOutput(dir.resolve("nats.log").toFile()).start();
    ReactorCommitReporter good = null;
    ReactorCommitReporter noCert = null;
    try {
      await(() -> Files.exists(dir.resolve("nats.log")) && read(dir.resolve("nats.log")).contains("Server is ready"),
          Duration.ofSeconds(30), "nats-server with TLS ready");
      String url = "tls://127.0.0.1:" + port;
      noCert = new ReactorCommitReporter();
      noCert.initialize(props(url, ReporterConfig.TLS_CA_FILE, path("ca.pem"), ReporterConfig.RETRY_TIMEOUT_MS, "500"));
      noCert.report(report("cat.db.t", 1));
      ReactorCommitReporter refused = noCert;
      await(() -> refused.stats().failed == 1, Duration.ofSeconds(60), "the reporter without a client certificate refused");

      good = new ReactorCommitReporter();
      good.initialize(props(url, ReporterConfig.TLS_CA_FILE, path("ca.pem"), ReporterConfig.TLS_CERT_FILE, path("client.pem"),
          ReporterConfig.TLS_KEY_FILE, path("client.key")));
      // reactor's commit stream, created over the same mutual TLS.
      createStream(port);
      good.report(report("cat.db.t", 2));
      ReactorCommitReporter ok = good;
      await(() -> ok.stats().published == 1, Duration.ofSeconds(60), "published over mutual TLS");
      assertEquals(0, good.stats().failed);
    } finally {
      if (good != null) {
        good.close();
      }
      if (noCert != null) {
        noCert.close();
      }
      server.destroy();
      server.waitFor(20, TimeUnit.SECONDS);
    }
  }

  private void createStream(int port) throws Exception {
    io.nats.client.Options o = new io.nats.client.Options.Builder()
        .server("tls://127.0.0.1:" + port)
        .sslContext(TlsFiles.context(path("ca.pem"), path("client.pem"), path("client.key")))
        .build();
    try (io.nats.client.Connection nc = io.nats.client.Nats.connect(o)) {
      nc.jetStreamManagement().addStream(io.nats.client.api.StreamConfiguration.builder()
          .name(TestSupport.STREAM).subjects("iceberg.commits.>")
          .retentionPolicy(io.nats.client.api.RetentionPolicy.WorkQueue).build());
    }
  }

  private String path(String name) {
    return dir.resolve(name).toString();
  }

  private static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (Exception e) {
      return "";
    }
  }
}
