import DocumentKit
import Testing
