// Oracle for the protocol tests: Kafka 4.3.1's own generated message classes.
// One request per stdin line, one answer per stdout line (a long-lived JVM: start-up is ~1.5 s).
//   B2J <ClassName> <version> <hex>   -> "<json written by Kafka's JsonConverter>\t<hex Kafka re-encodes>"
//   J2B <ClassName> <version> <json>  -> "<hex Kafka encodes>\t<json Kafka writes back>"
// An error answers "ERR <exception>". ClassName is Kafka's (VoteRequestData, QuorumStateData...).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.Readable;

public class MessageOracle {
  static final ObjectMapper MAPPER = new ObjectMapper();

  static Class<?> resolve(String name) throws ClassNotFoundException {
    if (name.equals("QuorumStateData")) return Class.forName("org.apache.kafka.raft.generated." + name);
    return Class.forName("org.apache.kafka.common.message." + name);
  }

  static String hex(Message m, short v) {
    ByteBuffer buf = MessageUtil.toByteBufferAccessor(m, v).buffer();
    byte[] out = new byte[buf.remaining()];
    buf.get(out);
    return HexFormat.of().formatHex(out);
  }

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
    String line;
    while ((line = in.readLine()) != null) {
      String[] p = line.split(" ", 4);
      try {
        Class<?> c = resolve(p[1]);
        short v = Short.parseShort(p[2]);
        Class<?> conv = Class.forName(c.getName() + "JsonConverter");
        Method write = conv.getMethod("write", c, short.class);
        Method read = conv.getMethod("read", JsonNode.class, short.class);
        Message m;
        if (p[0].equals("B2J")) {
          byte[] data = HexFormat.of().parseHex(p.length > 3 ? p[3] : "");
          ByteBuffer bb = ByteBuffer.wrap(data);
          m = (Message) c.getConstructor(Readable.class, short.class).newInstance(new ByteBufferAccessor(bb), v);
          if (bb.hasRemaining()) throw new RuntimeException(bb.remaining() + " trailing bytes");
        } else {
          m = (Message) read.invoke(null, MAPPER.readTree(p[3]), v);
        }
        String json = write.invoke(null, m, v).toString();
        String h = hex(m, v);
        System.out.println(p[0].equals("B2J") ? json + "\t" + h : h + "\t" + json);
      } catch (InvocationTargetException e) {
        System.out.println("ERR " + String.valueOf(e.getCause()).replace('\n', ' '));
      } catch (Exception e) {
        System.out.println("ERR " + String.valueOf(e).replace('\n', ' '));
      }
      System.out.flush();
    }
  }
}
