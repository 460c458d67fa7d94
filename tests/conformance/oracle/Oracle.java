/*
 * metaquorum's Kafka oracle: one long-lived JVM that answers JSON lines on stdin/stdout using
 * Apache Kafka's own classes (the jars pinned in KAFKA_VERSION), so the conformance tier can
 * compare our codecs with Kafka's on thousands of values without paying a JVM start per case.
 *
 * Protocol: one JSON object per line in, one JSON object per line out, in order. Every request
 * may carry an "id" that is echoed back. A reply is {"ok": true, ...} or {"ok": false, "error":
 * "...", "exception": "<class>"}; bad input never kills the process. Ops:
 *   encode        {message, version, json}            -> {hex}
 *   decode        {message, version, hex}             -> {json, hex (Kafka's re-encoding, or
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
 * Binary values (keys, values, header values) travel as standard base64; message bytes as hex.
 *
 * Written for metaquorum from Kafka's public API; no Kafka source is copied here.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.KRaftVersionRecord;
import org.apache.kafka.common.message.LeaderChangeMessage;
import org.apache.kafka.common.message.SnapshotFooterRecord;
import org.apache.kafka.common.message.SnapshotHeaderRecord;
import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.Writable;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.ControlRecordUtils;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.raft.internals.BatchBuilder;
import org.apache.kafka.server.common.serialization.RecordSerde;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

public final class Oracle {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final HexFormat HEX = HexFormat.of();
    private static final String[] PACKAGES = {
        "org.apache.kafka.common.message.", "org.apache.kafka.raft.generated."
    };

    /** Reflection handles for one generated message class, resolved once. */
    private static final class MessageKind {
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

    private static MessageKind kind(String name) throws ReflectiveOperationException {
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

    private static String text(JsonNode req, String field) {
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
        out.set("json", k.toJson(msg, v));
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

    private static JsonNode b64(ByteBuffer buf) {
        if (buf == null) {
            return NullNode.instance;
        }
        byte[] bytes = new byte[buf.remaining()];
        buf.duplicate().get(bytes);
        return NODES.textNode(Base64.getEncoder().encodeToString(bytes));
    }

    private static byte[] unb64(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        return Base64.getDecoder().decode(node.asText());
    }

    private static ObjectNode controlJson(Record record) throws Exception {
        ObjectNode c = NODES.objectNode();
        ControlRecordType type = ControlRecordType.parse(record.key());
        c.put("type", type.name());
        c.put("typeId", type.type());
        Object msg = null;
        String name = null;
        switch (type) {
            case LEADER_CHANGE:
                msg = ControlRecordUtils.deserializeLeaderChangeMessage(record);
                name = "LeaderChangeMessage";
                break;
            case SNAPSHOT_HEADER:
                msg = ControlRecordUtils.deserializeSnapshotHeaderRecord(record);
                name = "SnapshotHeaderRecord";
                break;
            case SNAPSHOT_FOOTER:
                msg = ControlRecordUtils.deserializeSnapshotFooterRecord(record);
                name = "SnapshotFooterRecord";
                break;
            case KRAFT_VERSION:
                msg = ControlRecordUtils.deserializeKRaftVersionRecord(record);
                name = "KRaftVersionRecord";
                break;
            case KRAFT_VOTERS:
                msg = ControlRecordUtils.deserializeVotersRecord(record);
                name = "VotersRecord";
                break;
            default:
                break;
        }
        if (msg != null) {
            c.put("message", name);
            // Control record values are always written and read at message version 0.
            c.set("json", kind(name).toJson(msg, (short) 0));
        }
        return c;
    }

    private static ObjectNode recordsRead(JsonNode req) throws Exception {
        MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(HEX.parseHex(text(req, "hex"))));
        ObjectNode out = NODES.objectNode();
        ArrayNode batches = out.putArray("batches");
        for (MutableRecordBatch batch : records.batches()) {
            ObjectNode b = batches.addObject();
            b.put("baseOffset", batch.baseOffset());
            b.put("lastOffset", batch.lastOffset());
            b.put("partitionLeaderEpoch", batch.partitionLeaderEpoch());
            b.put("magic", batch.magic());
            b.put("checksum", batch.checksum());
            boolean valid;
            String invalidReason = null;
            try {
                batch.ensureValid();
                valid = true;
            } catch (RuntimeException e) {
                valid = false;
                invalidReason = e.getMessage();
            }
            b.put("crcValid", valid);
            if (invalidReason != null) {
                b.put("invalidReason", invalidReason);
            }
            b.put("isControl", batch.isControlBatch());
            b.put("isTransactional", batch.isTransactional());
            b.put("compression", batch.compressionType().name);
            b.put("timestampType", batch.timestampType().name);
            if (batch instanceof DefaultRecordBatch) {
                b.put("baseTimestamp", ((DefaultRecordBatch) batch).baseTimestamp());
            }
            b.put("maxTimestamp", batch.maxTimestamp());
            b.put("producerId", batch.producerId());
            b.put("producerEpoch", batch.producerEpoch());
            b.put("baseSequence", batch.baseSequence());
            b.put("sizeInBytes", batch.sizeInBytes());
            Integer count = batch.countOrNull();
            b.put("count", count == null ? -1 : count);
            ArrayNode recs = b.putArray("records");
            try {
                readRecords(batch, recs);
            } catch (RuntimeException e) {
                b.put("recordsError", e.getClass().getName() + ": " + e.getMessage());
            }
        }
        out.put("validBytes", records.validBytes());
        out.put("sizeInBytes", records.sizeInBytes());
        return out;
    }

    private static void readRecords(RecordBatch batch, ArrayNode recs) throws Exception {
        for (Record r : batch) {
            ObjectNode o = recs.addObject();
            o.put("offset", r.offset());
            o.put("timestamp", r.timestamp());
            o.set("key", b64(r.key()));
            o.set("value", b64(r.value()));
            ArrayNode hs = o.putArray("headers");
            for (Header h : r.headers()) {
                ObjectNode ho = hs.addObject();
                ho.put("key", h.key());
                ho.set("value", h.value() == null ? NullNode.instance
                    : NODES.textNode(Base64.getEncoder().encodeToString(h.value())));
            }
            if (batch.isControlBatch()) {
                o.set("control", controlJson(r));
            }
        }
    }

    /** A RecordSerde of raw bytes, so BatchBuilder writes exactly the data batches KRaft writes. */
    private static final class BytesSerde implements RecordSerde<byte[]> {
        @Override
        public int recordSize(byte[] data, ObjectSerializationCache cache) {
            return data.length;
        }

        @Override
        public void write(byte[] data, ObjectSerializationCache cache, Writable out) {
            out.writeByteArray(data);
        }

        @Override
        public byte[] read(Readable input, int size) {
            return input.readArray(size);
        }
    }

    private static byte[] toArray(MemoryRecords records) {
        ByteBuffer buf = records.buffer().duplicate();
        byte[] out = new byte[buf.remaining()];
        buf.get(out);
        return out;
    }

    private static ObjectNode recordsBuild(JsonNode req) throws Exception {
        long baseOffset = req.path("baseOffset").asLong(0);
        int epoch = req.path("epoch").asInt(0);
        long timestamp = req.path("timestamp").asLong(0);
        ByteBuffer buffer = ByteBuffer.allocate(req.path("capacity").asInt(1 << 20));
        MemoryRecords built;
        if (req.has("control") && req.path("helper").asBoolean(false)) {
            // One control record through the MemoryRecords.with*Message helpers.
            JsonNode c = req.get("control").get(0);
            String type = text(c, "type");
            JsonNode json = c.get("json");
            short v = 0;
            switch (type) {
                case "LeaderChange":
                    built = MemoryRecords.withLeaderChangeMessage(baseOffset, timestamp, epoch, buffer,
                        (LeaderChangeMessage) kind("LeaderChangeMessage").fromJson(json, v));
                    break;
                case "SnapshotHeader":
                    built = MemoryRecords.withSnapshotHeaderRecord(baseOffset, timestamp, epoch, buffer,
                        (SnapshotHeaderRecord) kind("SnapshotHeaderRecord").fromJson(json, v));
                    break;
                case "SnapshotFooter":
                    built = MemoryRecords.withSnapshotFooterRecord(baseOffset, timestamp, epoch, buffer,
                        (SnapshotFooterRecord) kind("SnapshotFooterRecord").fromJson(json, v));
                    break;
                case "KRaftVersion":
                    built = MemoryRecords.withKRaftVersionRecord(baseOffset, timestamp, epoch, buffer,
                        (KRaftVersionRecord) kind("KRaftVersionRecord").fromJson(json, v));
                    break;
                case "KRaftVoters":
                    built = MemoryRecords.withVotersRecord(baseOffset, timestamp, epoch, buffer,
                        (VotersRecord) kind("VotersRecord").fromJson(json, v));
                    break;
                default:
                    throw new IllegalArgumentException("unknown control type: " + type);
            }
        } else if (req.has("control")) {
            MemoryRecordsBuilder builder = new MemoryRecordsBuilder(buffer, RecordBatch.CURRENT_MAGIC_VALUE,
                Compression.NONE, TimestampType.CREATE_TIME, baseOffset, timestamp, RecordBatch.NO_PRODUCER_ID,
                RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE, false, true, epoch, buffer.capacity());
            for (JsonNode c : req.get("control")) {
                String type = text(c, "type");
                JsonNode json = c.get("json");
                short v = 0;
                switch (type) {
                    case "LeaderChange":
                        builder.appendLeaderChangeMessage(timestamp,
                            (LeaderChangeMessage) kind("LeaderChangeMessage").fromJson(json, v));
                        break;
                    case "SnapshotHeader":
                        builder.appendSnapshotHeaderMessage(timestamp,
                            (SnapshotHeaderRecord) kind("SnapshotHeaderRecord").fromJson(json, v));
                        break;
                    case "SnapshotFooter":
                        builder.appendSnapshotFooterMessage(timestamp,
                            (SnapshotFooterRecord) kind("SnapshotFooterRecord").fromJson(json, v));
                        break;
                    case "KRaftVersion":
                        builder.appendKRaftVersionMessage(timestamp,
                            (KRaftVersionRecord) kind("KRaftVersionRecord").fromJson(json, v));
                        break;
                    case "KRaftVoters":
                        builder.appendVotersMessage(timestamp,
                            (VotersRecord) kind("VotersRecord").fromJson(json, v));
                        break;
                    default:
                        throw new IllegalArgumentException("unknown control type: " + type);
                }
            }
            built = builder.build();
        } else if ("raft".equals(req.path("mode").asText("memory"))) {
            BatchBuilder<byte[]> builder = new BatchBuilder<>(buffer, new BytesSerde(), Compression.NONE,
                baseOffset, timestamp, epoch, buffer.capacity());
            ObjectSerializationCache cache = new ObjectSerializationCache();
            for (JsonNode r : req.path("records")) {
                byte[] value = unb64(r.get("value"));
                builder.appendRecord(value == null ? new byte[0] : value, cache);
            }
            built = builder.build();
        } else {
            Compression compression = Compression.of(req.path("compression").asText("none")).build();
            MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, RecordBatch.CURRENT_MAGIC_VALUE,
                compression, TimestampType.CREATE_TIME, baseOffset, timestamp, RecordBatch.NO_PRODUCER_ID,
                RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE, false, epoch);
            long offset = baseOffset;
            for (JsonNode r : req.path("records")) {
                JsonNode hs = r.path("headers");
                Header[] headers = new Header[hs.size()];
                for (int i = 0; i < hs.size(); i++) {
                    headers[i] = new RecordHeader(text(hs.get(i), "key"), unb64(hs.get(i).get("value")));
                }
                long ts = r.has("timestamp") ? r.get("timestamp").asLong() : timestamp;
                builder.appendWithOffset(offset++, ts, unb64(r.get("key")), unb64(r.get("value")), headers);
            }
            built = builder.build();
        }
        ObjectNode out = NODES.objectNode();
        out.put("hex", HEX.formatHex(toArray(built)));
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
                return recordsRead(req);
            case "records_build":
                return recordsBuild(req);
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
