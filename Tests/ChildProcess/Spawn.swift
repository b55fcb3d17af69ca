import Foundation
import Glibc

/// One `posix_spawn` call: the file actions that set up the child's standard input, output and error, and the
/// attributes that give it a clean signal state.
///
/// Every descriptor the parent keeps is close-on-exec from its creation (`pipe2` with `O_CLOEXEC`), so no other child
/// inherits it; the child additionally closes every descriptor from 3 up before it runs the executable, so it gets
/// nothing that other code of the test process opened without `O_CLOEXEC`. Files and `/dev/null` are opened by the
/// child itself. Nothing reads `/proc/self/fd`.
struct Spawn {
    var executable: URL
    var arguments: [String]
    var environment: [String]
    var input: ChildProcess.Input
    var output: ChildProcess.Output
    var error: ChildProcess.Output

    /// What the parent keeps of a started child.
    struct Started {
        var pid: pid_t
        var input: Int32?
        var output: Int32?
        var error: Int32?
    }

    /// Starts the child.
    func run() throws(ChildProcessError) -> Started {
        guard output != .sameAsStandardOutput else {
            throw ChildProcessError(.invalidConfiguration, "standard output cannot go to standard output")
        }
        let actions = UnsafeMutablePointer<posix_spawn_file_actions_t>.allocate(capacity: 1)
        let attributes = UnsafeMutablePointer<posix_spawnattr_t>.allocate(capacity: 1)
        defer {
            actions.deallocate()
            attributes.deallocate()
        }
        try check(posix_spawn_file_actions_init(actions), "posix_spawn_file_actions_init")
        defer { posix_spawn_file_actions_destroy(actions) }
        try check(posix_spawnattr_init(attributes), "posix_spawnattr_init")
        defer { posix_spawnattr_destroy(attributes) }

        // The child's ends of the pipes: closed here once the child has its copies, or when spawning fails.
        var childEnds: [Int32] = []
        defer { for descriptor in childEnds { close(descriptor) } }
        var started = Started(pid: 0)
        do {
            switch input {
            case .nullDevice:
                try check(posix_spawn_file_actions_addopen(actions, 0, "/dev/null", O_RDONLY, 0), "addopen")
            case .pipe:
                let (read, write) = try Self.makePipe()
                started.input = write
                childEnds.append(read)
                try check(posix_spawn_file_actions_adddup2(actions, read, 0), "adddup2")
            }
            started.output = try redirect(output, to: 1, actions, childEnds: &childEnds)
            started.error = try redirect(error, to: 2, actions, childEnds: &childEnds)
            if let addCloseFrom = Self.addCloseFrom {
                try check(addCloseFrom(actions, 3), "posix_spawn_file_actions_addclosefrom_np")
            }
            try setCleanSignals(attributes)
            started.pid = try spawn(actions, attributes)
            return started
        } catch {
            for descriptor in [started.input, started.output, started.error].compactMap({ $0 }) { close(descriptor) }
            throw error
        }
    }

    /// Adds the actions that send `descriptor` (1 or 2) to `destination`; returns the read end of a new pipe.
    private func redirect(
        _ destination: ChildProcess.Output, to descriptor: Int32,
        _ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, childEnds: inout [Int32]
    ) throws(ChildProcessError) -> Int32? {
        switch destination {
        case .inherit:
            return nil
        case .nullDevice:
            try check(posix_spawn_file_actions_addopen(actions, descriptor, "/dev/null", O_WRONLY, 0), "addopen")
            return nil
        case .file(let url, let append):
            let flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
            try check(posix_spawn_file_actions_addopen(actions, descriptor, url.path, flags, 0o644), "addopen")
            return nil
        case .pipe:
            let (read, write) = try Self.makePipe()
            childEnds.append(write)
            try check(posix_spawn_file_actions_adddup2(actions, write, descriptor), "adddup2")
            return read
        case .sameAsStandardOutput:
            try check(posix_spawn_file_actions_adddup2(actions, 1, descriptor), "adddup2")
            return nil
        }
    }

    /// An empty signal mask and default dispositions, as a shell gives a program: the spawning thread may block
    /// signals (Dispatch's worker threads do) and the test process may ignore some, neither of which should reach
    /// the child. The child also gets a process group of its own, as Foundation's `Process` gives it.
    private func setCleanSignals(_ attributes: UnsafeMutablePointer<posix_spawnattr_t>) throws(ChildProcessError) {
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        try check(posix_spawnattr_setsigmask(attributes, &none), "posix_spawnattr_setsigmask")
        try check(posix_spawnattr_setsigdefault(attributes, &all), "posix_spawnattr_setsigdefault")
        try check(posix_spawnattr_setpgroup(attributes, 0), "posix_spawnattr_setpgroup")
        let flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP
        try check(posix_spawnattr_setflags(attributes, Int16(flags)), "posix_spawnattr_setflags")
    }

    private func spawn(
        _ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>,
        _ attributes: UnsafeMutablePointer<posix_spawnattr_t>
    ) throws(ChildProcessError) -> pid_t {
        var pid: pid_t = 0
        let result = Self.withCStrings([executable.path] + arguments) { argv in
            Self.withCStrings(environment) { envp in
                posix_spawn(&pid, executable.path, actions, attributes, argv, envp)
            }
        }
        guard result == 0 else {
            throw ChildProcessError(.spawnFailed, "posix_spawn \(executable.path)", errno: result)
        }
        return pid
    }

    private func check(_ result: Int32, _ what: String) throws(ChildProcessError) {
        guard result == 0 else {
            throw ChildProcessError(.spawnFailed, "\(what) for \(executable.path)", errno: result)
        }
    }

    /// `strings` as a `NULL`-terminated array of C strings, valid during `body`.
    private static func withCStrings<Result>(
        _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result
    ) -> Result {
        let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    /// A pipe whose two ends are close-on-exec from the start.
    private static func makePipe() throws(ChildProcessError) -> (read: Int32, write: Int32) {
        guard let pipe2 else { throw ChildProcessError(.spawnFailed, "the C library has no pipe2") }
        var ends: [Int32] = [-1, -1]
        guard pipe2(&ends, O_CLOEXEC) == 0 else { throw ChildProcessError(.spawnFailed, "pipe2", errno: errno) }
        return (ends[0], ends[1])
    }

    // The C library declares these only for `_GNU_SOURCE`, which Swift's Glibc module does not set, so they are
    // looked up by name. `pipe2` is in every glibc since 2.9; `posix_spawn_file_actions_addclosefrom_np` since 2.34.
    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let pipe2: Pipe2? = dlsym(nil, "pipe2").map { unsafeBitCast($0, to: Pipe2.self) }
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }
}
