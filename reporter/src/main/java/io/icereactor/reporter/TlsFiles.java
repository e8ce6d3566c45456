package io.icereactor.reporter;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * An SSLContext from PEM files, the form nats-server and most deployments keep them in: the CA
 * certificates to trust (without one, the JVM's default trust store), and a client certificate
 * chain with its PKCS#8 private key (RSA, EC or Ed25519; {@code openssl pkcs8 -topk8 -nocrypt}
 * turns an older "RSA PRIVATE KEY" or "EC PRIVATE KEY" file into one).
 */
final class TlsFiles {
  private static final Pattern KEY =
      Pattern.compile("-----BEGIN PRIVATE KEY-----([^-]+)-----END PRIVATE KEY-----");

  private TlsFiles() {}

  static SSLContext context(String caFile, String certFile, String keyFile) throws Exception {
    TrustManagerFactory tmf = null;
    if (caFile != null) {
      KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
      trust.load(null, null);
      int i = 0;
      for (Certificate c : certificates(caFile)) {
        trust.setCertificateEntry("ca-" + i++, c);
      }
      if (i == 0) {
        throw new IOException(ReporterConfig.TLS_CA_FILE + " holds no certificate: " + caFile);
      }
      tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
    }
    KeyManagerFactory kmf = null;
    if (certFile != null) {
      List<Certificate> chain = new ArrayList<>(certificates(certFile));
      if (chain.isEmpty()) {
        throw new IOException(ReporterConfig.TLS_CERT_FILE + " holds no certificate: " + certFile);
      }
      PrivateKey key = privateKey(keyFile, chain.get(0).getPublicKey().getAlgorithm());
      KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
      ks.load(null, null);
      char[] none = new char[0];
      ks.setKeyEntry("client", key, none, chain.toArray(new Certificate[0]));
      kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(ks, none);
    }
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf == null ? null : tmf.getTrustManagers(), null);
    return ctx;
  }

  private static Collection<? extends Certificate> certificates(String file) throws Exception {
    byte[] pem = Files.readAllBytes(Paths.get(file));
    return CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem));
  }

  private static PrivateKey privateKey(String file, String algorithm) throws Exception {
    String pem = new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.US_ASCII);
    Matcher m = KEY.matcher(pem);
    if (!m.find()) {
      throw new IOException(
          ReporterConfig.TLS_KEY_FILE
              + " must hold a PKCS#8 \"BEGIN PRIVATE KEY\" block (openssl pkcs8 -topk8 -nocrypt): "
              + file);
    }
    byte[] der = Base64.getMimeDecoder().decode(m.group(1));
    return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
  }
}
