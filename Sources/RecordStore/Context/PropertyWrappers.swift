import Foundation

/// A Swift type an attribute's values can be read and written as through ``Attribute``.
public protocol AttributeValue {
    /// The value read from `value`, `nil` when it is not one.
    init?(recordValue value: RecordValue)
    /// The value as the store keeps it.
    var recordValue: RecordValue { get }
    /// What a property of this type reads as while its attribute holds no value (a new object's required
    /// attribute without a default, before it is set).
    static var emptyValue: Self { get }
}

/// A typed attribute of a ``ManagedObject`` subclass, read and written through the object's context.
///
/// ```swift
/// final class Item: ManagedObject {
///     @Attribute("title") var title: String
///     @Attribute("note") var note: String?
/// }
/// ```
@propertyWrapper
public struct Attribute<Value: AttributeValue>: Sendable {
    /// The attribute's name in the entity.
    public let key: String

    /// Binds the property to the attribute named `key`.
    public init(_ key: String) { self.key = key }

    @available(*, unavailable, message: "@Attribute is only for properties of ManagedObject subclasses")
    public var wrappedValue: Value {
        get { fatalError() }
        set { fatalError() }
    }

    // Inlined into each property's accessors, where the compiler knows `Value` and `Object` and reads the key
    // straight from the object's storage: called through its generic entry point, a read or write looked up type
    // metadata and walked a key path each time, a third of the time of making an object and setting its values.
    @inlinable
    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object, wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
    ) -> Value {
        get {
            let key = object[keyPath: storageKeyPath].key
            if object.isKeyProbe {
                object.probeRead(key, through: wrappedKeyPath)
                return .emptyValue
            }
            return Value(recordValue: object.attributeValue(forKey: key)) ?? .emptyValue
        }
        set {
            object.setAttributeValue(newValue.recordValue, forKey: object[keyPath: storageKeyPath].key)
        }
    }
}

/// A typed to-one relationship of a ``ManagedObject`` subclass.
///
/// ```swift
/// final class Item: ManagedObject {
///     @ToOne("list") var list: GroceryList?
/// }
/// ```
@propertyWrapper
public struct ToOne<Target: ManagedObject>: Sendable {
    /// The relationship's name in the entity.
    public let key: String

    /// Binds the property to the relationship named `key`.
    public init(_ key: String) { self.key = key }

    @available(*, unavailable, message: "@ToOne is only for properties of ManagedObject subclasses")
    public var wrappedValue: Target? {
        get { fatalError() }
        set { fatalError() }
    }

    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object, wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Target?>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
    ) -> Target? {
        get {
            let key = object[keyPath: storageKeyPath].key
            return object.withContext { context in context.relationship(of: object, key).first as? Target } ?? nil
        }
        set {
            let key = object[keyPath: storageKeyPath].key
            object.withContext { context in context.setRelationship(newValue.map { [$0] } ?? [], of: object, key) }
        }
    }
}

/// A typed to-many relationship of a ``ManagedObject`` subclass; insert into the set or assign a new one.
///
/// ```swift
/// final class Item: ManagedObject {
///     @ToMany("tags") var tags: Set<Tag>
/// }
/// item.tags.insert(family)
/// ```
@propertyWrapper
public struct ToMany<Target: ManagedObject>: Sendable {
    /// The relationship's name in the entity.
    public let key: String

    /// Binds the property to the relationship named `key`.
    public init(_ key: String) { self.key = key }

    @available(*, unavailable, message: "@ToMany is only for properties of ManagedObject subclasses")
    public var wrappedValue: Set<Target> {
        get { fatalError() }
        set { fatalError() }
    }

    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object, wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Set<Target>>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
    ) -> Set<Target> {
        get {
            let key = object[keyPath: storageKeyPath].key
            return object.withContext { context in
                Set(context.relationship(of: object, key).compactMap { $0 as? Target })
            } ?? []
        }
        set {
            let key = object[keyPath: storageKeyPath].key
            object.withContext { context in context.setRelationship(Set(newValue), of: object, key) }
        }
    }
}

// MARK: - The Swift types of attributes

extension String: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .string(let text) = value else { return nil }
        self = text
    }
    public var recordValue: RecordValue { .string(self) }
    public static var emptyValue: String { "" }
}

extension Int: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .integer(let number) = value, let exact = Int(exactly: number) else { return nil }
        self = exact
    }
    public var recordValue: RecordValue { .integer(Int64(self)) }
    public static var emptyValue: Int { 0 }
}

extension Int16: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .integer(let number) = value, let exact = Int16(exactly: number) else { return nil }
        self = exact
    }
    public var recordValue: RecordValue { .integer(Int64(self)) }
    public static var emptyValue: Int16 { 0 }
}

extension Int32: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .integer(let number) = value, let exact = Int32(exactly: number) else { return nil }
        self = exact
    }
    public var recordValue: RecordValue { .integer(Int64(self)) }
    public static var emptyValue: Int32 { 0 }
}

extension Int64: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .integer(let number) = value else { return nil }
        self = number
    }
    public var recordValue: RecordValue { .integer(self) }
    public static var emptyValue: Int64 { 0 }
}

extension Double: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .double(let number) = value else { return nil }
        self = number
    }
    public var recordValue: RecordValue { .double(self) }
    public static var emptyValue: Double { 0 }
}

extension Decimal: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .decimal(let number) = value else { return nil }
        self = number
    }
    public var recordValue: RecordValue { .decimal(self) }
    public static var emptyValue: Decimal { 0 }
}

extension Bool: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .boolean(let flag) = value else { return nil }
        self = flag
    }
    public var recordValue: RecordValue { .boolean(self) }
    public static var emptyValue: Bool { false }
}

extension Date: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .date(let date) = value else { return nil }
        self = date
    }
    public var recordValue: RecordValue { .date(self) }
    public static var emptyValue: Date { Date(timeIntervalSinceReferenceDate: 0) }
}

extension UUID: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .uuid(let uuid) = value else { return nil }
        self = uuid
    }
    public var recordValue: RecordValue { .uuid(self) }
    public static var emptyValue: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
}

extension URL: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .url(let url) = value else { return nil }
        self = url
    }
    public var recordValue: RecordValue { .url(self) }
    public static var emptyValue: URL { URL(string: "about:blank")! }
}

extension Data: AttributeValue {
    public init?(recordValue value: RecordValue) {
        guard case .data(let data) = value else { return nil }
        self = data
    }
    public var recordValue: RecordValue { .data(self) }
    public static var emptyValue: Data { Data() }
}

extension Optional: AttributeValue where Wrapped: AttributeValue {
    public init?(recordValue value: RecordValue) {
        if value.isNull {
            self = .none
        } else if let wrapped = Wrapped(recordValue: value) {
            self = .some(wrapped)
        } else {
            return nil
        }
    }
    public var recordValue: RecordValue { self?.recordValue ?? .null }
    public static var emptyValue: Wrapped? { nil }
}

// MARK: - Values as `Any`, for key-value access

extension RecordValue {
    /// The value as the Swift type of `type` (`Int16` for a 16-bit integer …); `nil` for ``null``.
    func anyValue(as type: AttributeType) -> Any? {
        switch (self, type) {
        case (.null, _): nil
        case (.integer(let number), .integer16): Int16(exactly: number) as Any?
        case (.integer(let number), .integer32): Int32(exactly: number) as Any?
        case (.integer(let number), _): number
        case (.string(let value), _): value
        case (.double(let value), _): value
        case (.decimal(let value), _): value
        case (.boolean(let value), _): value
        case (.date(let value), _): value
        case (.uuid(let value), _): value
        case (.url(let value), _): value
        case (.data(let value), _): value
        case (.object(let value), _): value
        }
    }

    /// A value of `type` from a Swift value; `nil` when `any` is not one (any integer type is taken for the
    /// integer types, and checked against the range at save).
    init?(any: Any?, as type: AttributeType) {
        guard let any else {
            self = .null
            return
        }
        let value: RecordValue? =
            switch (type, any) {
            case (.string, let value as String): .string(value)
            case (.integer16, let value as any BinaryInteger), (.integer32, let value as any BinaryInteger),
                (.integer64, let value as any BinaryInteger):
                Int64(exactly: value).map { .integer($0) }
            case (.double, let value as Double): .double(value)
            case (.double, let value as Float): .double(Double(value))
            case (.decimal, let value as Decimal): .decimal(value)
            case (.boolean, let value as Bool): .boolean(value)
            case (.date, let value as Date): .date(value)
            case (.uuid, let value as UUID): .uuid(value)
            case (.uri, let value as URL): .url(value)
            case (.binaryData, let value as Data): .data(value)
            case (_, let value as RecordValue): value
            default: nil
            }
        guard let value, value.isNull || type.accepts(value) else { return nil }
        self = value
    }
}
