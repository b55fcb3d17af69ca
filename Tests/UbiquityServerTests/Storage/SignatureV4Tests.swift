import Foundation
import Testing

@testable import UbiquityServer

/// The signer against AWS's published Signature Version 4 test suite (credentials `AKIDEXAMPLE`, region
/// `us-east-1`, service `service`, 2015-08-30 12:36:00 UTC) and the S3 documentation's signed GET example. Each
/// vector's request is rebuilt here from the suite's `.req` file and its expected signature copied from its
/// `.authz`; where the suite gives the canonical request's hash (its `.sts`), that step is checked too, so a failure
/// names the step that went wrong.
@Suite("S3: Signature Version 4 against AWS's test vectors")
struct SignatureV4Tests {
    static let suite = SignatureV4(
        credentials: .init(accessKey: "AKIDEXAMPLE", secretKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1", service: "service")
    /// 20150830T123600Z.
    static let suiteDate = Date(timeIntervalSince1970: 1_440_938_160)

    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        let method: String
        let path: String
        var query: [(name: String, value: String)] = []
        var headers: [(name: String, value: String)] = []
        var body = ""
        let signedHeaders: String
        let signature: String
        /// The SHA-256 of the canonical request, the last line of the suite's string to sign, where known.
        var canonicalHash: String?

        var testDescription: String { name }

        var request: SignatureV4.Request {
            SignatureV4.Request(
                method: method, path: path, query: query,
                headers: [("Host", "example.amazonaws.com")] + headers + [("X-Amz-Date", "20150830T123600Z")],
                payloadHash: SignatureV4.payloadHash(of: Array(body.utf8)))
        }
    }

    static let vectors: [Vector] = [
        Vector(
            name: "get-vanilla", method: "GET", path: "/", signedHeaders: "host;x-amz-date",
            signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
            canonicalHash: "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"),
        Vector(
            name: "get-vanilla-query-order-key-case", method: "GET", path: "/",
            query: [("Param2", "value2"), ("Param1", "value1")], signedHeaders: "host;x-amz-date",
            signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
            canonicalHash: "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0"),
        Vector(
            name: "get-vanilla-query-order-value", method: "GET", path: "/",
            query: [("Param1", "value2"), ("Param1", "value1")], signedHeaders: "host;x-amz-date",
            signature: "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"),
        Vector(
            name: "get-unreserved", method: "GET",
            path: "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
            signedHeaders: "host;x-amz-date",
            signature: "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"),
        Vector(
            name: "get-slashes", method: "GET", path: "//example//", signedHeaders: "host;x-amz-date",
            signature: "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84"),
        Vector(
            name: "get-header-key-duplicate", method: "GET", path: "/",
            headers: [("My-Header1", "value2"), ("My-Header1", "value2"), ("My-Header1", "value1")],
            signedHeaders: "host;my-header1;x-amz-date",
            signature: "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"),
        Vector(
            name: "post-x-www-form-urlencoded", method: "POST", path: "/",
            headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "Param1=value1",
            signedHeaders: "content-type;host;x-amz-date",
            signature: "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
            canonicalHash: "42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281"),
    ]

    @Test("Each vector of the suite signs to AWS's signature", arguments: vectors)
    func suiteVector(_ vector: Vector) {
        let request = vector.request
        let (_, signedHeaders) = Self.suite.canonicalRequest(request)
        #expect(signedHeaders == vector.signedHeaders)
        if let canonicalHash = vector.canonicalHash {
            let stringToSign = Self.suite.stringToSign(request, at: Self.suiteDate)
            #expect(
                stringToSign
                    == "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n\(canonicalHash)")
        }
        #expect(
            Self.suite.authorization(request, at: Self.suiteDate)
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                + "SignedHeaders=\(vector.signedHeaders), Signature=\(vector.signature)")
    }

    @Test("The canonical request of the suite's form post, line by line")
    func canonicalRequestLines() {
        let post = Self.vectors.first { $0.name == "post-x-www-form-urlencoded" }!
        #expect(
            Self.suite.canonicalRequest(post.request).text
                == """
                POST
                /

                content-type:application/x-www-form-urlencoded
                host:example.amazonaws.com
                x-amz-date:20150830T123600Z

                content-type;host;x-amz-date
                9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e
                """)
    }

    /// The S3 documentation's example: the first ten bytes of `test.txt` from `examplebucket`, its payload the empty
    /// one. S3 signs the path as sent (no normalization) and requires `x-amz-content-sha256`.
    @Test("The S3 documentation's signed GET with a range")
    func s3GetObjectExample() {
        let signer = SignatureV4(
            credentials: .init(
                accessKey: "AKIAIOSFODNN7EXAMPLE", secretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1", service: "s3")
        #expect(!signer.normalizesPath)
        let date = Date(timeIntervalSince1970: 1_369_353_600)  // 20130524T000000Z
        let request = SignatureV4.Request(
            method: "GET", path: "/test.txt",
            headers: [("Range", "bytes=0-9"), ("x-amz-date", SignatureV4.timestamp(date))],
            payloadHash: SignatureV4.emptyPayloadHash)
        let headers = signer.signedHeaders(request, host: "examplebucket.s3.amazonaws.com", at: date)
        let authorization = headers.first { $0.name == "authorization" }?.value
        #expect(SignatureV4.timestamp(date) == "20130524T000000Z")
        #expect(
            authorization
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        var signed = request
        signed.headers = headers.filter { $0.name != "authorization" }
        #expect(
            signer.stringToSign(signed, at: date).hasSuffix(
                "\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"))
    }

    @Test("Keys are encoded once, byte by byte, and S3 keeps their slashes and dots as sent")
    func encoding() {
        #expect(SignatureV4.encode("a key/ሴ+%", keepingSlash: true) == "a%20key/%E1%88%B4%2B%25")
        #expect(SignatureV4.encode("a/b", keepingSlash: false) == "a%2Fb")
        #expect(SignatureV4.normalized("/a/./b/../c//d/") == "/a/c/d/")
        let s3 = SignatureV4(credentials: .init(accessKey: "k", secretKey: "s"), region: "r", service: "s3")
        let request = SignatureV4.Request(
            method: "GET", path: "/bucket/a//b/../c", headers: [("host", "h")], payloadHash: "UNSIGNED-PAYLOAD")
        #expect(s3.canonicalRequest(request).text.split(separator: "\n")[1] == "/bucket/a//b/../c")
        #expect(SignatureV4.trimmed("  a   b  c ") == "a b c")
    }
}
