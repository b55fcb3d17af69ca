import Foundation

extension Document {

    /// Runs a throwing operation for a `Bool`-returning one: reports an error through
    /// ``handleError(_:userInteractionPermitted:)`` and returns whether it succeeded. A save dropped because another
    /// writer deleted the file is not reported: the deletion closes the document, dropping its changes, and an
    /// autosave the timer asked for just before the deletion was noticed is no error of the app's.
    func reportingErrors(userInteractionPermitted: Bool, _ body: @MainActor () async throws -> Void) async -> Bool {
        do {
            try await body()
            return true
        } catch let error as DocumentError where error.code == .closedByDeletion && wasDeleted {
            return false
        } catch {
            errorsBeingHandled += 1
            handleError(error, userInteractionPermitted: userInteractionPermitted)
            return false
        }
    }
}
