import Foundation
import Logging
import NIOCore
import UbiquityProtocol

extension EngineSocketServer {
    typealias Connection = NIOAsyncChannel<ByteBuffer, ByteBuffer>
    typealias Subscription = (id: UInt64, events: AsyncStream<SyncEvent>)

    /// Serves one connection until the client closes it, sends a frame too long, or the server stops.
    func serve(_ connection: Connection) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                let (subscriptions, subscribe) = AsyncStream.makeStream(of: Subscription.self)
                await withTaskGroup(of: Void.self) { tasks in
                    tasks.addTask { await self.forward(subscriptions, to: outbound) }
                    await self.answer(inbound, to: outbound, closing: connection.channel, subscribe: subscribe)
                    tasks.cancelAll()
                }
            }
        } catch {
            logger.debug("engine socket connection ended", metadata: ["error": "\(error)"])
        }
    }

    /// Reads the connection's requests and answers each (concurrently, up to the configured number); a
    /// `subscribe` is handed to the forwarding task. Returns when the client is gone and every request is answered.
    private func answer(
        _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        closing channel: any Channel, subscribe: AsyncStream<Subscription>.Continuation
    ) async {
        await withTaskGroup(of: Void.self) { requests in
            var running = 0
            var subscribed = false
            do {
                for try await frame in inbound {
                    let request: EngineRequest
                    switch Self.read(frame) {
                    case .success(let read): request = read
                    case .failure(let refusal):
                        await write(.response(EngineResponse(id: refusal.id, .failure(refusal.error))), to: outbound)
                        continue
                    }
                    if case .subscribe = request.operation {
                        if subscribed {
                            await write(.response(EngineResponse(id: request.id, .done)), to: outbound)
                        } else {
                            // The listener is in place before the answer, so every later event reaches the client.
                            subscribed = true
                            subscribe.yield((request.id, sync.events()))
                        }
                        continue
                    }
                    if running >= configuration.maximumRequestsInFlight {
                        await requests.next()
                        running -= 1
                    }
                    running += 1
                    requests.addTask {
                        let outcome = await self.outcome(of: request.operation)
                        await self.write(.response(EngineResponse(id: request.id, outcome)), to: outbound)
                    }
                }
            } catch {
                // A frame too long: the stream cannot be trusted to be in step any more.
                logger.notice("engine socket connection closed", metadata: ["error": "\(error)"])
                channel.close(promise: nil)
            }
            subscribe.finish()
        }
    }

    /// Answers the connection's subscription, if it makes one, then forwards every event until cancelled.
    private func forward(
        _ subscriptions: AsyncStream<Subscription>, to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    ) async {
        var iterator = subscriptions.makeAsyncIterator()
        guard let subscription = await iterator.next() else { return }
        await write(.response(EngineResponse(id: subscription.id, .done)), to: outbound)
        for await event in subscription.events {
            await write(.event(event), to: outbound)
        }
    }

    /// Writes one frame; a client that went away is no error of the engine's.
    private func write(_ message: EngineMessage, to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) async {
        do {
            try await outbound.write(EngineFrame.encode(message))
        } catch {
            logger.debug("engine socket write failed", metadata: ["error": "\(error)"])
        }
    }
}
