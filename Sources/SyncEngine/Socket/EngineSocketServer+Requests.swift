import NIOCore
import UbiquityProtocol

extension EngineSocketServer {
    /// A frame that is not a request: the error to answer with, and the frame's id when it could be read.
    struct Refusal: Error {
        var id: UInt64?
        var error: ProtocolError
    }

    /// The request in a frame, or why there is none.
    static func read(_ frame: ByteBuffer) -> Result<EngineRequest, Refusal> {
        do {
            return .success(try EngineFrame.decode(EngineRequest.self, from: frame))
        } catch {
            let id = (try? EngineFrame.decode(FrameID.self, from: frame))?.id
            return .failure(Refusal(id: id, error: refusal(for: error)))
        }
    }

    /// Carries out a request on the container's sync.
    func outcome(of operation: EngineRequest.Operation) async -> EngineResponse.Outcome {
        do {
            switch operation {
            case .items:
                let items = try await sync.items()
                return .items(items, transfers: sync.currentTransfers())
            case .transfers:
                return .transfers(sync.currentTransfers())
            case .item(let path):
                return .item(try await sync.item(at: path))
            case .download(let path):
                try await sync.download(path)
            case .evict(let path):
                try await sync.evict(path)
            case .versions(let path):
                let (current, versions) = try await sync.versions(of: path)
                return .versions(current: current, versions)
            case .resolve(let path, let keep):
                try await sync.resolve(path, keeping: keep)
            case .contents(let path, let version):
                return .file(try await sync.contents(of: version, at: path).path)
            case .otherVersions(let path):
                return .versions(
                    current: try await sync.item(at: path)?.serverVersion, try await sync.otherVersions(of: path))
            case .changeVersions(let path, let operations):
                try await sync.changeVersions(of: path, operations)
            case .changeVersionsNow(let path, let item, let change):
                try sync.changeVersionsNow(of: path, item: item, change)
            case .keyValues:
                return .keyValues(try await sync.keyValues())
            case .setKeyValues(let puts, let removes):
                try await sync.setKeyValues(puts, removing: removes)
            case .syncNow:
                try await sync.syncOnce()
            case .health:
                return .health(sync.health())
            case .subscribe:
                break
            }
            return .done
        } catch let error as ProtocolError {
            return .failure(error)
        } catch {
            let record = ItemError(error)  // a local failure (disk, network): internalError, with what happened
            return .failure(ProtocolError(record.code, record.message))
        }
    }

    /// The typed error for a frame that could not be decoded, naming the problem.
    private static func refusal(for error: any Error) -> ProtocolError {
        func field(_ path: [any CodingKey]) -> String { path.map(\.stringValue).joined(separator: ".") }
        switch error {
        case let error as ProtocolError:
            return error
        case DecodingError.keyNotFound(let key, _):
            return ProtocolError(.malformedRequest, "the request has no \"\(key.stringValue)\"")
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            guard !context.codingPath.isEmpty else {
                return ProtocolError(.malformedRequest, "the frame is not a JSON object")
            }
            return ProtocolError(.malformedRequest, "\"\(field(context.codingPath))\" has the wrong type")
        case DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty:
            return ProtocolError(.malformedRequest, "the frame is not JSON")
        case DecodingError.dataCorrupted(let context):
            return ProtocolError(.malformedRequest, "\"\(field(context.codingPath))\" is not valid")
        default:
            return ProtocolError(.malformedRequest, "the frame cannot be read: \(error)")
        }
    }

    /// Just the id of a frame, to answer a request that cannot be read as a whole.
    private struct FrameID: Decodable {
        var id: UInt64
    }
}
