import Foundation
import NIOCore
import UbiquityProtocol

/// The framing of the engine's socket: every message is one line of UTF-8 JSON ended by `\n` (JSON strings escape
/// their newlines, so a line is exactly one message). Empty lines are ignored.
enum EngineFrame {
    /// The longest request frame the engine reads (1 MiB, newline not counted); a longer one closes the
    /// connection, since the stream can no longer be trusted to be in step.
    static let maximumRequestBytes = 1 << 20
    /// The longest frame a client reads (256 MiB): a container's item list may be long.
    static let maximumResponseBytes = 256 << 20

    /// One message as a frame, newline included.
    static func encode(_ value: some Encodable) throws -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var buffer = ByteBuffer(bytes: try encoder.encode(value))
        buffer.writeInteger(UInt8(ascii: "\n"))
        return buffer
    }

    /// The message in a frame (newline removed).
    static func decode<Value: Decodable>(_ type: Value.Type, from frame: ByteBuffer) throws -> Value {
        try JSONDecoder().decode(type, from: Data(frame.readableBytesView))
    }
}

/// Cuts a byte stream into frames at each `\n`, refusing (with ``ProtocolError/Code/bodyTooLarge``, which makes
/// the pipeline close the connection) a frame longer than its limit.
struct EngineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    /// The most bytes one frame may have, newline not counted.
    let maximumFrameBytes: Int
    /// How many readable bytes were already searched for a newline.
    private var searched = 0

    init(maximumFrameBytes: Int) {
        self.maximumFrameBytes = maximumFrameBytes
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let view = buffer.readableBytesView
        guard let newline = view.dropFirst(searched).firstIndex(of: UInt8(ascii: "\n")) else {
            searched = view.count
            guard view.count <= maximumFrameBytes else { throw tooLong }
            return .needMoreData
        }
        searched = 0
        let length = newline - view.startIndex
        guard length <= maximumFrameBytes else { throw tooLong }
        let frame = buffer.readSlice(length: length)
        buffer.moveReaderIndex(forwardBy: 1)
        if let frame, frame.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(frame)) }
        return .continue
    }

    mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData  // bytes after the last newline are not a whole frame
    }

    private var tooLong: ProtocolError {
        ProtocolError(.bodyTooLarge, "a frame is longer than \(maximumFrameBytes) bytes")
    }
}
