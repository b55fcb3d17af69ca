import Foundation
import Hummingbird
import NIOCore

extension RouteEnvironment {
    /// `GET /health`, `GET /metrics`, `GET /openapi.json`.
    func addOperationsRoutes(to router: some RouterMethods<ServerRequestContext>) {
        let health = HealthCheck(store: store, chunks: chunks)
        router.get("health") { _, _ -> Response in
            let report = await health.report()
            return Response(
                status: report.isHealthy ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(report))))
        }
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(string: metrics.exposition())))
        }
        router.get("openapi.json") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.json)))
        }
    }
}

/// Counts every request and every error answer.
struct MetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        metrics.requests.increment()
        let response = try await next(request, context)
        if response.status.code >= 400 { metrics.failures.increment() }
        return response
    }
}
