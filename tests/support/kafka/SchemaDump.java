import java.lang.reflect.Method; import java.lang.reflect.Modifier; import java.lang.reflect.InvocationTargetException; import java.lang.reflect.Field;
import java.util.*;
import org.apache.kafka.common.protocol.types.Type; import org.apache.kafka.common.protocol.types.Schema; import org.apache.kafka.common.protocol.types.BoundField; import org.apache.kafka.common.protocol.types.TaggedFields; import org.apache.kafka.common.protocol.types.ArrayOf; import org.apache.kafka.common.protocol.types.CompactArrayOf;

public class SchemaDump {
  static Map<Object,String> structNames = new IdentityHashMap<>();
  static void collect(Class<?> c, String prefix) throws Exception {
    for (Class<?> n : c.getDeclaredClasses()) {
      for (Field f : n.getDeclaredFields()) {
        if (Modifier.isStatic(f.getModifiers()) && f.getName().startsWith("SCHEMA_")) {
          f.setAccessible(true); Object s = f.get(null); if (s != null) structNames.put(s, n.getSimpleName());
        }
      }
      collect(n, prefix);
    }
  }
  static String q(String s){ return "\"" + s.replace("\\","\\\\").replace("\"","\\\"") + "\""; }
  static String typeStr(Type t) throws Exception {
    if (t instanceof ArrayOf || t instanceof CompactArrayOf) {
      Type e = t.arrayElementType().get();
      return "{\"kind\":" + q(t instanceof ArrayOf ? "ARRAY" : "COMPACT_ARRAY") + ",\"nullable\":" + t.isNullable() + ",\"elem\":" + typeStr(e) + "}";
    }
    if (t instanceof Schema) {
      return "{\"kind\":\"STRUCT\",\"name\":" + q(structNames.getOrDefault(t, "?")) + ",\"fields\":" + schemaStr((Schema)t) + "}";
    }
    return "{\"kind\":" + q(t.toString()) + ",\"nullable\":" + t.isNullable() + "}";
  }
  static String schemaStr(Schema s) throws Exception {
    StringBuilder sb = new StringBuilder("[");
    boolean first = true;
    for (BoundField bf : s.fields()) {
      if (!first) sb.append(","); first = false;
      org.apache.kafka.common.protocol.types.Field d = bf.def;
      if (d.type instanceof TaggedFields) {
        Field mf = TaggedFields.class.getDeclaredField("fields"); mf.setAccessible(true);
        Map<Integer, org.apache.kafka.common.protocol.types.Field> m = (Map) mf.get(d.type);
        sb.append("{\"name\":\"_tagged_fields\",\"tagged\":{");
        boolean f2 = true;
        for (Map.Entry<Integer, org.apache.kafka.common.protocol.types.Field> e : new TreeMap<>(m).entrySet()) {
          if (!f2) sb.append(","); f2 = false;
          sb.append(q(String.valueOf(e.getKey()))).append(":{\"name\":").append(q(e.getValue().name)).append(",\"type\":").append(typeStr(e.getValue().type)).append("}");
        }
        sb.append("}}");
      } else {
        sb.append("{\"name\":").append(q(d.name)).append(",\"type\":").append(typeStr(d.type)).append("}");
      }
    }
    return sb.append("]").toString();
  }
  public static void main(String[] args) throws Exception {
    System.out.println("{");
    boolean firstMsg = true;
    for (String cn : args) {
      Class<?> c = Class.forName(cn);
      structNames.clear(); collect(c, "");
      short lo = c.getField("LOWEST_SUPPORTED_VERSION").getShort(null);
      short hi = c.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
      Schema[] schemas = (Schema[]) c.getField("SCHEMAS").get(null);
      Class<?> conv = Class.forName(cn + "JsonConverter");
      if (!firstMsg) System.out.println(","); firstMsg = false;
      System.out.print(q(c.getSimpleName()) + ":{\"lowest\":" + lo + ",\"highest\":" + hi + ",\"schemas\":{");
      for (int v = lo; v <= hi; v++) {
        if (v > lo) System.out.print(",");
        System.out.print(q(""+v) + ":" + schemaStr(schemas[v]));
      }
      System.out.print("},\"defaults\":{");
      // default instance JSON for top level and nested struct classes
      List<Class<?>> all = new ArrayList<>(); all.add(c);
      Deque<Class<?>> dq = new ArrayDeque<>(Arrays.asList(c.getDeclaredClasses()));
      while (!dq.isEmpty()) { Class<?> n = dq.pop(); if (!Modifier.isAbstract(n.getModifiers())) all.add(n); dq.addAll(Arrays.asList(n.getDeclaredClasses())); }
      boolean fd = true;
      for (Class<?> n : all) {
        Method w = null; Class<?> cv = conv;
        if (n != c) { try { cv = Class.forName(conv.getName() + "$" + n.getSimpleName() + "JsonConverter"); } catch (Exception e) { continue; } }
        try { w = cv.getMethod("write", n, short.class); } catch (Exception e) { continue; }
        Object inst; try { inst = n.getConstructor().newInstance(); } catch (Exception e) { continue; }
        for (int v = lo; v <= hi; v++) {
          String js;
          try { js = w.invoke(null, inst, (short) v).toString(); } catch (InvocationTargetException e) { js = q("ERR " + e.getCause()); }
          if (!fd) System.out.print(","); fd = false;
          System.out.print(q(n.getSimpleName() + "@" + v) + ":" + js);
        }
      }
      System.out.print("}}");
    }
    System.out.println("}");
  }
}
