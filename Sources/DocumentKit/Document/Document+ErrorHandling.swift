import Foundation

extension Document {

    /// Runs a throwing operation for a `Bool`-returning one: reports an error through
    /// ``handleError(_:userInteractionPermitted:)`` and returns whether it succeeded.
    func reportingErrors(userInteractionPermitted: Bool, _ body: @MainActor () async throws -> Void) async -> Bool {
        do {
            try await body()
            return true
        } catch {
            errorsBeingHandled += 1
            handleError(error, userInteractionPermitted: userInteractionPermitted)
            return false
        }
    }
}
