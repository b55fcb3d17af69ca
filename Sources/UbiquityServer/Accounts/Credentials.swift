import Crypto
import Foundation
import HummingbirdBcrypt
import NIOPosix
import UbiquityProtocol

/// Password hashing (bcrypt) and device-token secrets (random, stored only as SHA-256).
public enum Credentials {
    /// The rules an account name and password must meet.
    /// - Throws: ``ProtocolError/Code/invalidAccount`` naming the broken rule.
    public static func validate(name: String, password: String) throws(ProtocolError) {
        guard (1...64).contains(name.count), !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == " " })
        else {
            throw ProtocolError(.invalidAccount, "an account name is 1 to 64 characters without spaces or controls")
        }
        guard (8...72).contains(password.utf8.count) else {
            throw ProtocolError(.invalidAccount, "a password is 8 to 72 bytes long")
        }
        // bcrypt reads a password only up to its first NUL, so one with a NUL would match others.
        guard !password.utf8.contains(0) else { throw ProtocolError(.invalidAccount, "a password may not contain NUL") }
    }

    /// The bcrypt hash of `password`, computed off the concurrency pool (it takes tens to hundreds of ms).
    public static func hash(_ password: String, cost: UInt8) async -> String {
        await offPool { Bcrypt.hash(password, cost: cost) }
    }

    /// Whether `password` matches `hash`, checked off the concurrency pool. A password that could not have been
    /// set (empty, over 72 bytes, or with a NUL, where bcrypt would stop reading) never matches.
    public static func verify(_ password: String, hash: String) async -> Bool {
        let acceptable = (1...72).contains(password.utf8.count) && !password.utf8.contains(0)
        let matches = await offPool { Bcrypt.verify(password, hash: hash) }
        return acceptable && matches
    }

    /// A new token secret: `ubq_` and 43 characters of base64url (32 random bytes).
    public static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let text = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "ubq_" + text
    }

    /// What the service stores of a secret.
    public static func secretHash(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(secret.utf8)))
    }

    /// Runs CPU-heavy work (bcrypt) on NIO's blocking-work threads, so it does not hold one of the few threads every
    /// request's tasks share: a Dispatch global queue would not do, since on Linux it is that very pool.
    private static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        // The singleton pool is never shut down, so the work always runs.
        (try? await NIOThreadPool.singleton.runIfActive { work() }) ?? work()
    }
}
