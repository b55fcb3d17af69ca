import HTTPTypes
import Hummingbird

/// A router front that remembers every route added through it (and through groups made from it), so the
/// service can prove its OpenAPI document lists each one.
final class RecordingRouter<Context: RequestContext>: RouterMethods {
    let router: Router<Context>
    private(set) var routes: [RouteSignature] = []

    init(_ router: Router<Context>) { self.router = router }

    @discardableResult func on<Responder: HTTPResponder>(
        _ path: RouterPath, method: HTTPRequest.Method, responder: Responder
    ) -> Self where Responder.Context == Context {
        routes.append(RouteSignature(method: method.rawValue, path: path.description))
        router.on(path, method: method, responder: responder)
        return self
    }

    @discardableResult func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        router.add(middleware: middleware)
        return self
    }
}

/// A route's method and path template, as `GET /v1/containers/{container}/changes`.
public struct RouteSignature: Hashable, Sendable, CustomStringConvertible {
    /// The HTTP method.
    public var method: String
    /// The path template with `{parameter}` placeholders.
    public var path: String

    public var description: String { "\(method) \(path)" }
}
