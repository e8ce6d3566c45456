package io.icereactor.reporter;

import java.util.regex.Pattern;

/** Keeps secrets and long values out of logs: no log line quotes a password or a token. */
final class Redact {
  private static final Pattern USERINFO = Pattern.compile("(?<=://)[^/@,]*@");
  private static final int MAX = 256;

  private Redact() {}

  /** The URL(s) with any user:password@ or token@ masked. */
  static String url(String url) {
    if (url == null) {
      return null;
    }
    return cut(USERINFO.matcher(url).replaceAll("***@"));
  }

  /** The value cut to 256 characters. */
  static String cut(String s) {
    if (s == null || s.length() <= MAX) {
      return s;
    }
    return s.substring(0, MAX) + "...";
  }

  /** An exception's class and message, URLs in it masked, cut. */
  static String error(Throwable t) {
    String msg = t.getMessage();
    String s = t.getClass().getSimpleName() + (msg == null ? "" : ": " + msg);
    return cut(USERINFO.matcher(s).replaceAll("***@"));
  }
}
