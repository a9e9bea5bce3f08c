/// A position in a source file: a 1-based line and column, and the 0-based byte offset.
///
/// Lines end at LF (`\n`); a CR before it is ordinary whitespace. Columns count Unicode
/// scalars from the start of the line, so `"é"` advances the column by one whatever its
/// UTF-8 length; a tab counts as one column. A UTF-8 byte order mark at the start of the
/// file is not counted.
public struct SourceLocation: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The line, from 1.
    public let line: Int
    /// The column in Unicode scalars, from 1.
    public let column: Int
    /// The offset in bytes from the start of the file, from 0.
    public let offset: Int

    /// Creates a location.
    public init(line: Int, column: Int, offset: Int) {
        self.line = line
        self.column = column
        self.offset = offset
    }

    /// `line:column`, as in `4:19`.
    public var description: String { "\(line):\(column)" }

    /// Orders by position in the file.
    public static func < (a: SourceLocation, b: SourceLocation) -> Bool { a.offset < b.offset }
}
