import HummingbirdCore
import Logging
import NIOCore

/// Closes, at a graceful shutdown, a connection on which no request has arrived yet.
///
/// HTTP clients open connections ahead of need (AsyncHTTPClient's shared client keeps an idle one for 600 s). Until
/// its first request, such a connection waits in the WebSocket upgrade negotiation, which neither answers a graceful
/// shutdown nor a cancellation, so a server stopping would wait for the client to hang up. Wrapped around the server's
/// child channel, this puts a handler first in each connection's pipeline that closes it when asked to quiesce before
/// any byte came in; a connection in use passes the request to quiesce on to Hummingbird's own handlers, which close
/// it after its answer.
struct UnusedConnectionCloser<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base

    init(_ base: Base) {
        self.base = base
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(CloseUnusedOnQuiesce(), position: .first)
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// Remembers whether a connection has received anything; closes it at a request to quiesce if not.
final class CloseUnusedOnQuiesce: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private var used = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        used = true
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, !used {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
