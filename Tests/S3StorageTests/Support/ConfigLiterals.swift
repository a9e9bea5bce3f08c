import PlugboardAPI

// Config values written as JSON-like literals in these tests: "text", 3, 2.5, true.
extension ConfigValue: @retroactive ExpressibleByStringLiteral, @retroactive ExpressibleByIntegerLiteral,
    @retroactive ExpressibleByFloatLiteral, @retroactive ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
