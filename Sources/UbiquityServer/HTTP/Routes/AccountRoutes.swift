import Foundation
import Hummingbird
import UbiquityProtocol

extension RouteEnvironment {
    /// `POST /v1/accounts`, `POST /v1/login`: the routes open to anyone.
    func addOpenAccountRoutes(to router: some RouterMethods<ServerRequestContext>) {
        router.post("accounts") { request, _ -> Response in
            guard configuration.openRegistration else {
                throw ProtocolError(
                    .registrationClosed, "this service does not take registrations; ask its operator for an account")
            }
            let body = try await decode(RegisterRequest.self, from: request)
            try Credentials.validate(name: body.name, password: body.password)
            let hash = await Credentials.hash(body.password, cost: configuration.bcryptCost)
            let account = try await store.createAccount(
                name: body.name, passwordHash: hash, quotaBytes: configuration.defaultQuotaBytes)
            return try json(
                AccountInfo(id: account.id, name: account.name, quotaBytes: account.quotaBytes, usedBytes: 0),
                status: .created)
        }
        router.post("login") { request, _ -> Response in
            let body = try await decode(LoginRequest.self, from: request)
            let deviceName = body.deviceName.trimmingCharacters(in: .whitespaces)
            guard (1...100).contains(deviceName.count), !deviceName.unicodeScalars.contains(where: { $0.value < 0x20 })
            else { throw ProtocolError(.malformedRequest, "a device name is 1 to 100 characters without controls") }
            let account = try await store.account(named: body.name)
            let hash: String
            if let account { hash = account.passwordHash } else { hash = await decoy() }
            let matches = await Credentials.verify(body.password, hash: hash)
            guard let account, matches else {
                throw ProtocolError(.invalidCredentials, "the account name or password is wrong")
            }
            let secret = Credentials.newSecret()
            let info = TokenInfo(
                id: UUID(), accountID: account.id,
                device: SavingDevice(id: body.deviceID ?? DeviceID(), name: deviceName),
                containers: body.containers.map { Array(Set($0)).sorted() }, createdAt: Date())
            try await store.insertToken(DeviceTokenRecord(info: info, secretHash: Credentials.secretHash(secret)))
            return try json(LoginResponse(token: secret, info: info), status: .created)
        }
    }

    /// `GET /v1/account`, `GET /v1/tokens`, `DELETE /v1/tokens/{token}`.
    func addAccountRoutes(to router: some RouterMethods<ServerRequestContext>) {
        router.get("account") { _, context -> Response in
            let identity = try context.requireIdentity()
            guard let account = try await store.account(id: identity.info.accountID) else {
                throw ProtocolError(.unauthorized, "the account no longer exists")
            }
            return try json(
                AccountInfo(
                    id: account.id, name: account.name, quotaBytes: account.quotaBytes, usedBytes: account.usedBytes))
        }
        router.get("tokens") { _, context -> Response in
            let identity = try context.requireIdentity()
            return try json(try await store.tokens(of: identity.info.accountID).map(\.info))
        }
        router.delete("tokens/{token}") { _, context -> Response in
            let identity = try context.requireIdentity()
            let text = try context.parameters.require("token")
            guard let id = UUID(uuidString: text),
                try await store.revokeToken(id, of: identity.info.accountID, at: Date())
            else { throw ProtocolError(.tokenNotFound, "the account has no token \(text.prefix(80))") }
            tokens.remove(id: id)
            cluster?.announce(.tokenRevoked(id))
            return Response(status: .noContent)
        }
    }
}
