import Prometheus

/// The service's figures, exposed at `GET /metrics` in Prometheus' text format.
public struct ServerMetrics: Sendable {
    /// The registry the figures live in (one per service, so several services in one process keep theirs apart).
    public let registry = PrometheusCollectorRegistry()
    let requests: Counter
    let failures: Counter
    let commits: Counter
    let bytesIn: Counter
    let uploadBytes: Counter
    let chunksIn: Counter
    let bytesOut: Counter
    let pushConnections: Gauge
    let pushMessages: Counter
    /// How long metadata store operations take, by operation.
    let database: StoreTimings
    /// How long chunk store operations take (`contains`, `read` until the first byte, `store`).
    let chunkStore: StoreTimings

    /// Creates the figures, all at zero.
    public init() {
        requests = registry.makeCounter(descriptor: Self.descriptor("http_requests", "total", "HTTP requests answered"))
        failures = registry.makeCounter(
            descriptor: Self.descriptor("http_errors", "total", "HTTP requests answered with an error"))
        commits = registry.makeCounter(
            descriptor: Self.descriptor(
                "commits", "total", "item changes committed (versions, moves, deletes, resolutions)"))
        bytesIn = registry.makeCounter(
            descriptor: Self.descriptor(
                "chunk_bytes_in", "total", "chunk bytes newly stored (each chunk of an account once)"))
        uploadBytes = registry.makeCounter(
            descriptor: Self.descriptor(
                "chunk_upload_bytes", "total", "bytes of chunk uploads received, chunks already stored included"))
        chunksIn = registry.makeCounter(
            descriptor: Self.descriptor("chunks_in", "total", "chunks newly stored (each chunk of an account once)"))
        bytesOut = registry.makeCounter(descriptor: Self.descriptor("chunk_bytes_out", "total", "chunk bytes sent"))
        pushConnections = registry.makeGauge(
            descriptor: Self.descriptor("push_connections", "", "open push connections"))
        pushMessages = registry.makeCounter(descriptor: Self.descriptor("push_messages", "total", "push messages sent"))
        database = StoreTimings(
            registry: registry, name: "database_duration", help: "time metadata store operations take, by operation")
        chunkStore = StoreTimings(
            registry: registry, name: "chunk_store_duration", help: "time chunk store operations take, by operation")
    }

    private static func descriptor(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "ubiquity", metricName: name, unitName: unit, helpText: help)
    }

    /// The figures in Prometheus' text format.
    public func exposition() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
