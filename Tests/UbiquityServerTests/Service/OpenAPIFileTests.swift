import Foundation
import Testing
import UbiquityServer

@Suite("The API document in docs/")
struct OpenAPIFileTests {
    @Test("docs/openapi.json is the document the service serves at GET /openapi.json")
    func checkedInDocumentIsCurrent() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/openapi.json")
        let checkedIn = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? NSDictionary
        let served = try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json)) as? NSDictionary
        #expect(checkedIn != nil)
        let same = checkedIn == served
        // When the API changes: `ubiquity server --port 0`, then save GET /openapi.json (pretty-printed) there.
        #expect(same, "docs/openapi.json differs from the served document; write it again from GET /openapi.json")
    }
}
