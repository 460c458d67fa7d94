/*
 * The records half of metaquorum's Kafka oracle (see Oracle.java for the protocol): reads record
 * batches with Kafka's MemoryRecords (CRC via ensureValid, records, control records decoded by
 * ControlRecordUtils) and builds them with MemoryRecordsBuilder, KRaft's BatchBuilder, or the
 * MemoryRecords.with*Message helpers, as KRaft's LeaderState and RecordsSnapshotWriter do.
 *
 * Written for metaquorum from Kafka's public API; no Kafka source is copied here.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.KRaftVersionRecord;
import org.apache.kafka.common.message.LeaderChangeMessage;
import org.apache.kafka.common.message.SnapshotFooterRecord;
import org.apache.kafka.common.message.SnapshotHeaderRecord;
import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.Writable;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.ControlRecordUtils;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.raft.internals.BatchBuilder;
import org.apache.kafka.server.common.serialization.RecordSerde;

import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.HexFormat;

final class OracleRecords {
    private static final JsonNodeFactory NODES = Oracle.NODES;
    private static final HexFormat HEX = Oracle.HEX;

    private OracleRecords() {
    }

    private static Oracle.MessageKind kind(String name) throws ReflectiveOperationException {
        return Oracle.kind(name);
    }

    private static String text(JsonNode req, String field) {
        return Oracle.text(req, field);
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

    static ObjectNode recordsRead(JsonNode req) throws Exception {
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

    static ObjectNode recordsBuild(JsonNode req) throws Exception {
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
}
