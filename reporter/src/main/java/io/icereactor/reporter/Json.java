package io.icereactor.reporter;

import java.nio.charset.StandardCharsets;

/**
 * The little JSON the events need (objects, strings, longs), written by hand: the engines' own
 * Jackson is shaded under names that differ by engine, and a JSON library of our own would
 * double the jar. Strings must be well formed (see {@link CommitEvents#wellFormed}).
 */
final class Json {
  private final StringBuilder b;
  private boolean first = true;

  Json(int capacity) {
    b = new StringBuilder(capacity);
  }

  Json beginObject() {
    b.append('{');
    first = true;
    return this;
  }

  Json endObject() {
    b.append('}');
    first = false;
    return this;
  }

  Json name(String name) {
    if (!first) {
      b.append(',');
    }
    string(name);
    b.append(':');
    first = false;
    return this;
  }

  Json field(String name, String value) {
    name(name);
    string(value);
    return this;
  }

  Json field(String name, long value) {
    name(name);
    b.append(value);
    return this;
  }

  byte[] bytes() {
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public String toString() {
    return b.toString();
  }

  private void string(String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          b.append("\\\"");
          break;
        case '\\':
          b.append("\\\\");
          break;
        case '\n':
          b.append("\\n");
          break;
        case '\r':
          b.append("\\r");
          break;
        case '\t':
          b.append("\\t");
          break;
        default:
          if (c < 0x20 || c == 0x7f || c == '\u2028' || c == '\u2029') {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    b.append('"');
  }
}
