/*
 * metaquorum's Kafka oracle: one long-lived JVM that answers JSON lines on stdin/stdout using
 * Apache Kafka's own classes (the jars pinned in KAFKA_VERSION), so the conformance tier can
 * compare our codecs with Kafka's on thousands of values without paying a JVM start per case.
 *
 * Protocol: one JSON object per line in, one JSON object per line out, in order. Every request
 * may carry an "id" that is echoed back. A reply is {"ok": true, ...} or {"ok": false, "error":
 * "...", "exception": "<class>"}; bad input never kills the process. Ops:
 *   encode        {message, version, json}            -> {hex}
 *   decode        {message, version, hex}             -> {json, jsonText, hex (Kafka's re-encoding, or
 *                                                         null and writeError if it refuses)}
 *   default       {message, version}                  -> {json, hex} of new <Name>Data()
 *   versions      {message}                           -> {lowest, highest, flexible: [..],
 *                                                         api: {...} for request/response types}
 *   records_read  {hex}                               -> {batches: [...], validBytes, sizeInBytes}
 *   records_build {baseOffset, epoch, timestamp, records: [{key, value, headers}], mode,
 *                  compression (none|gzip|snappy|lz4|zstd, memory mode only)}
 *                 {baseOffset, epoch, timestamp, control: [{type, json}], helper} -> {hex}
 *                 (helper: one record via MemoryRecords.with<Type>Message, else one batch
 *                 through MemoryRecordsBuilder.append<Type>Message, as LeaderState does)
 *   batch         {requests: [...]}                   -> {replies: [...]}
 *   errors / api_keys                                 -> Kafka's Errors / ApiKeys enums
 *   ping                                              -> {kafkaVersion}
 * The records ops live in OracleRecords.java. Binary values (keys, values, header values)
 * travel as standard base64; message bytes as hex.
 *
 * Written for metaquorum from Kafka's public API; no Kafka source is copied here.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.utils.AppInfoParser;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

public final class Oracle {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    static final HexFormat HEX = HexFormat.of();
    private static final String[] PACKAGES = {
        "org.apache.kafka.common.message.", "org.apache.kafka.raft.generated."
    };

    /** Reflection handles for one generated message class, resolved once. */
    static final class MessageKind {
        final Class<?> cls;
        final Constructor<?> readCtor;
        final Method jsonRead;
        final Method jsonWrite;

        MessageKind(Class<?> cls) throws ReflectiveOperationException {
            this.cls = cls;
            this.readCtor = cls.getConstructor(Readable.class, short.class);
            Class<?> conv = Class.forName(cls.getName() + "JsonConverter");
            this.jsonRead = conv.getMethod("read", JsonNode.class, short.class);
            this.jsonWrite = conv.getMethod("write", cls, short.class);
        }

        Message fromJson(JsonNode node, short version) throws ReflectiveOperationException {
            return (Message) jsonRead.invoke(null, node, version);
        }

        JsonNode toJson(Object msg, short version) throws ReflectiveOperationException {
            return (JsonNode) jsonWrite.invoke(null, msg, version);
        }
    }

    private static final Map<String, MessageKind> KINDS = new HashMap<>();

    static MessageKind kind(String name) throws ReflectiveOperationException {
        MessageKind k = KINDS.get(name);
        if (k != null) {
            return k;
        }
        if (!name.matches("[A-Za-z0-9]+")) {
            throw new IllegalArgumentException("bad message name: " + name);
        }
        for (String pkg : PACKAGES) {
            for (String candidate : new String[] {name + "Data", name}) {
                try {
                    Class<?> cls = Class.forName(pkg + candidate);
                    if (Message.class.isAssignableFrom(cls)) {
                        k = new MessageKind(cls);
                        KINDS.put(name, k);
                        return k;
                    }
                } catch (ClassNotFoundException e) {
                    // try the next candidate
                }
            }
        }
        throw new IllegalArgumentException("unknown message: " + name);
    }

    private static byte[] write(Message msg, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = msg.size(cache, version);
        ByteBuffer buf = ByteBuffer.allocate(size);
        msg.write(new ByteBufferAccessor(buf), cache, version);
        if (buf.hasRemaining()) {
            throw new IllegalStateException("size() said " + size + " but write left " + buf.remaining());
        }
        return buf.array();
    }

    private static short version(JsonNode req) {
        JsonNode v = req.get("version");
        if (v == null || !v.canConvertToInt()) {
            throw new IllegalArgumentException("missing or bad 'version'");
        }
        return (short) v.asInt();
    }

    static String text(JsonNode req, String field) {
        JsonNode v = req.get(field);
        if (v == null || !v.isTextual()) {
            throw new IllegalArgumentException("missing or bad '" + field + "'");
        }
        return v.asText();
    }

    private static ObjectNode encode(JsonNode req) throws Exception {
        MessageKind k = kind(text(req, "message"));
        short v = version(req);
        JsonNode json = req.get("json");
        if (json == null || !json.isObject()) {
            throw new IllegalArgumentException("missing or bad 'json'");
        }
        Message msg = k.fromJson(json, v);
        ObjectNode out = NODES.objectNode();
        out.put("hex", HEX.formatHex(write(msg, v)));
        return out;
    }

    private static ObjectNode decode(JsonNode req) throws Exception {
        MessageKind k = kind(text(req, "message"));
        short v = version(req);
        ByteBuffer buf = ByteBuffer.wrap(HEX.parseHex(text(req, "hex")));
        Message msg = (Message) k.readCtor.newInstance(new ByteBufferAccessor(buf), v);
        if (buf.hasRemaining()) {
            throw new IllegalArgumentException(buf.remaining() + " leftover bytes after decoding");
        }
        ObjectNode out = NODES.objectNode();
        JsonNode json = k.toJson(msg, v);
        out.set("json", json);
        // The converter's JSON as Jackson prints it: key order, escapes and number forms.
        out.put("jsonText", json.toString());
        // Kafka's reader accepts some inputs its writer refuses (unknown tags out of order):
        // report the read, and the write failure beside it.
        try {
            out.put("hex", HEX.formatHex(write(msg, v)));
        } catch (RuntimeException e) {
            out.putNull("hex");
            out.put("writeError", e.getClass().getName() + ": " + e.getMessage());
        }
        out.put("unknownTaggedFields", msg.unknownTaggedFields().size());
        return out;
    }

    private static ObjectNode defaults(JsonNode req) throws Exception {
        MessageKind k = kind(text(req, "message"));
        short v = version(req);
        Message msg = (Message) k.cls.getConstructor().newInstance();
        ObjectNode out = NODES.objectNode();
        out.set("json", k.toJson(msg, v));
        out.put("hex", HEX.formatHex(write(msg, v)));
        return out;
    }

    private static boolean isFlexible(Schema schema) {
        for (BoundField f : schema.fields()) {
            if (f.def.type instanceof TaggedFields) {
                return true;
            }
        }
        return false;
    }

    private static ObjectNode versions(JsonNode req) throws Exception {
        MessageKind k = kind(text(req, "message"));
        short lowest = k.cls.getField("LOWEST_SUPPORTED_VERSION").getShort(null);
        short highest = k.cls.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
        Schema[] schemas = (Schema[]) k.cls.getField("SCHEMAS").get(null);
        ObjectNode out = NODES.objectNode();
        out.put("class", k.cls.getName());
        out.put("lowest", lowest);
        out.put("highest", highest);
        ArrayNode flexible = out.putArray("flexible");
        for (short v = lowest; v <= highest; v++) {
            if (v < schemas.length && schemas[v] != null && isFlexible(schemas[v])) {
                flexible.add(v);
            }
        }
        Object instance = k.cls.getConstructor().newInstance();
        if (instance instanceof ApiMessage && ((ApiMessage) instance).apiKey() >= 0) {
            String name = k.cls.getSimpleName();
            boolean isRequest = name.endsWith("RequestData");
            boolean isResponse = name.endsWith("ResponseData");
            if (isRequest || isResponse) {
                short apiKey = ((ApiMessage) instance).apiKey();
                ApiKeys api = ApiKeys.forId(apiKey);
                ApiMessageType type = api.messageType;
                ObjectNode a = out.putObject("api");
                a.put("apiKey", apiKey);
                a.put("name", api.name);
                a.put("oldestVersion", api.oldestVersion());
                a.put("latestVersion", api.latestVersion(true));
                a.put("latestStableVersion", api.latestVersion(false));
                a.put("latestVersionUnstable", type.latestVersionUnstable());
                ArrayNode headers = a.putArray("headerVersions");
                for (short v = api.oldestVersion(); v <= api.latestVersion(true); v++) {
                    headers.add(isRequest ? api.requestHeaderVersion(v) : api.responseHeaderVersion(v));
                }
                ArrayNode listeners = a.putArray("listeners");
                for (ApiMessageType.ListenerType l : type.listeners()) {
                    listeners.add(l.name());
                }
            }
        }
        return out;
    }


    private static ObjectNode dispatch(JsonNode req) throws Exception {
        String op = text(req, "op");
        switch (op) {
            case "ping": {
                ObjectNode out = NODES.objectNode();
                out.put("kafkaVersion", AppInfoParser.getVersion());
                return out;
            }
            case "errors": {
                ObjectNode out = NODES.objectNode();
                ArrayNode list = out.putArray("errors");
                for (Errors e : Errors.values()) {
                    ObjectNode o = list.addObject();
                    o.put("name", e.name());
                    o.put("code", e.code());
                }
                return out;
            }
            case "api_keys": {
                ObjectNode out = NODES.objectNode();
                ArrayNode list = out.putArray("apis");
                for (ApiKeys a : ApiKeys.values()) {
                    ObjectNode o = list.addObject();
                    o.put("enum", a.name());
                    o.put("name", a.name);
                    o.put("id", a.id);
                }
                return out;
            }
            case "encode":
                return encode(req);
            case "decode":
                return decode(req);
            case "versions":
                return versions(req);
            case "default":
                return defaults(req);
            case "records_read":
                return OracleRecords.recordsRead(req);
            case "records_build":
                return OracleRecords.recordsBuild(req);
            case "batch": {
                ObjectNode out = NODES.objectNode();
                ArrayNode replies = out.putArray("replies");
                JsonNode requests = req.get("requests");
                if (requests == null || !requests.isArray()) {
                    throw new IllegalArgumentException("missing or bad 'requests'");
                }
                for (JsonNode r : requests) {
                    replies.add(handle(r));
                }
                return out;
            }
            default:
                throw new IllegalArgumentException("unknown op: " + op);
        }
    }

    private static ObjectNode handle(JsonNode req) {
        ObjectNode out;
        try {
            if (req == null || !req.isObject()) {
                throw new IllegalArgumentException("request is not a JSON object");
            }
            out = dispatch(req);
            out.put("ok", true);
        } catch (Throwable e) {
            Throwable cause = e;
            while (cause instanceof java.lang.reflect.InvocationTargetException && cause.getCause() != null) {
                cause = cause.getCause();
            }
            out = NODES.objectNode();
            out.put("ok", false);
            out.put("error", String.valueOf(cause.getMessage()));
            out.put("exception", cause.getClass().getName());
        }
        if (req != null && req.has("id")) {
            out.set("id", req.get("id"));
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        // Keep stdout for the protocol only: anything else that prints goes to stderr.
        PrintStream protocolOut = System.out;
        System.setOut(System.err);
        PrintWriter out = new PrintWriter(new OutputStreamWriter(protocolOut, StandardCharsets.UTF_8), false);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode req;
            ObjectNode reply;
            try {
                req = MAPPER.readTree(line);
                reply = handle(req);
            } catch (Throwable e) {
                reply = NODES.objectNode();
                reply.put("ok", false);
                reply.put("error", "bad JSON: " + e.getMessage());
                reply.put("exception", e.getClass().getName());
            }
            out.println(MAPPER.writeValueAsString(reply));
            out.flush();
        }
    }
}
