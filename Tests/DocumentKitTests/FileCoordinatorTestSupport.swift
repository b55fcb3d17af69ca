import ChildProcess
import DocumentKit
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A temporary directory (its real path, symbolic links resolved) with a lock directory inside, removed on deinit.
final class CoordinationSandbox: Sendable {
    let root: URL
    let lockDirectory: String

    init() throws {
        let base = (NSTemporaryDirectory() as NSString).appendingPathComponent("ubiquity-coord-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let real = realpath(base, nil)!
        defer { free(real) }
        root = URL(fileURLWithPath: String(cString: real), isDirectory: true)
        lockDirectory = root.appendingPathComponent(".locks").path
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    func url(_ name: String) -> URL { root.appendingPathComponent(name) }

    func file(_ name: String, _ contents: String = "initial") throws -> URL {
        let url = url(name)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: url)
        return url
    }

    func directory(_ name: String) throws -> URL {
        let url = url(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func configuration(accessTimeout: TimeInterval = 10, presenterTimeout: TimeInterval = 10)
        -> FileCoordinator.Configuration
    {
        FileCoordinator.Configuration(
            accessTimeout: accessTimeout, presenterTimeout: presenterTimeout, lockDirectory: lockDirectory)
    }

    func coordinator(
        _ presenter: (any FilePresenter)? = nil,
        accessTimeout: TimeInterval = 10,
        presenterTimeout: TimeInterval = 10
    ) -> FileCoordinator {
        FileCoordinator(
            filePresenter: presenter,
            configuration: configuration(accessTimeout: accessTimeout, presenterTimeout: presenterTimeout))
    }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
@discardableResult
func eventually(timeout: TimeInterval = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
}

/// Runs `body` on a new thread; `join()` waits (at most `timeout`) for it to finish.
final class TestThread: Sendable {
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> Void) {
        let done = self.done
        Thread {
            body()
            done.signal()
        }.start()
    }

    @discardableResult
    func join(timeout: TimeInterval = 30) -> Bool {
        done.wait(timeout: .now() + timeout) == .success
    }
}

/// A value shared between test threads.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    var current: Value { value.withLock { $0 } }
    func update<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}

/// The `FileCoordinationError` code of `error`, if it is one.
func coordinationCode(_ error: (any Error)?) -> FileCoordinationError.Code? {
    (error as? FileCoordinationError)?.code
}

/// The `document-test-helper` executable built next to the test bundle.
func helperExecutable() throws -> URL {
    try builtProduct("document-test-helper")
}

/// A running `document-test-helper`; closing its standard input is its signal to let go.
final class HelperProcess: Sendable {
    let process: ChildProcess

    init(_ arguments: [String]) throws {
        process = try ChildProcess(try helperExecutable(), arguments: arguments, standardInput: .pipe)
    }

    /// Closes standard input.
    func release() { process.closeInput() }

    /// Waits (at most `timeout`) for the process to end; returns its exit status, or `nil` if it did not end.
    func wait(timeout: TimeInterval = 10) -> Int32? {
        guard eventually(timeout: timeout, { !process.isRunning }) else {
            process.terminate()
            return nil
        }
        return process.terminationStatus
    }

    /// Runs a helper command to the end and returns its exit status.
    static func run(_ arguments: [String]) throws -> Int32? {
        let helper = try HelperProcess(arguments)
        helper.release()
        return helper.wait()
    }
}

/// A presenter that logs every message it gets, answering at once unless told otherwise.
final class RecordingPresenter: FilePresenter {
    let presentedItemOperationQueue: OperationQueue
    private let state: Mutex<(url: URL?, log: [String])>
    /// What the presenter does when asked to save (default: complete at once).
    let onSave: Mutex<(@Sendable (@escaping @Sendable ((any Error)?) -> Void) -> Void)?> = Mutex(nil)
    /// Whether the presenter never answers relinquish requests.
    let ignoresRelinquish: Bool

    init(_ url: URL?, ignoresRelinquish: Bool = false) {
        state = Mutex((url, []))
        self.ignoresRelinquish = ignoresRelinquish
        presentedItemOperationQueue = OperationQueue()
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
    }

    var presentedItemURL: URL? { state.withLock { $0.url } }
    var log: [String] { state.withLock { $0.log } }
    func record(_ entry: String) { state.withLock { $0.log.append(entry) } }
    func clearLog() { state.withLock { $0.log = [] } }
    func count(_ entry: String) -> Int { log.filter { $0 == entry }.count }

    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        record("relinquishToReader")
        if !ignoresRelinquish { reader { self.record("reacquire") } }
    }
    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        record("relinquishToWriter")
        if !ignoresRelinquish { writer { self.record("reacquire") } }
    }
    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        record("save")
        if let onSave = onSave.withLock({ $0 }) { onSave(completionHandler) } else { completionHandler(nil) }
    }
    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        record("accommodateDeletion")
        completionHandler(nil)
    }
    func presentedItemDidMove(to newURL: URL) {
        record("didMove:\(newURL.path)")
        state.withLock { $0.url = newURL }
    }
    func presentedItemDidChange() { record("didChange") }
    func accommodatePresentedSubitemDeletion(
        at url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        record("accommodateSubitemDeletion:\(url.lastPathComponent)")
        completionHandler(nil)
    }
    func presentedSubitemDidAppear(at url: URL) { record("subitemDidAppear:\(url.lastPathComponent)") }
    func presentedSubitemDidChange(at url: URL) { record("subitemDidChange:\(url.lastPathComponent)") }
    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {
        record("subitemDidMove:\(oldURL.lastPathComponent)->\(newURL.lastPathComponent)")
    }
}
