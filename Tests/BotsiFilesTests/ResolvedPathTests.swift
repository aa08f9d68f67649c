import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiFiles

/// `resolve` (a file that may not exist yet) and `resolveParent` (an output's place) share how a
/// new name is placed in its resolved directory and what they refuse.
@Suite struct ResolvedPathTests {
    typealias Resolver = @Sendable (String, String) throws(FileError) -> ResolvedPath
    static let resolvers: [(String, Resolver)] = [
        ("resolve", ResolvedPath.resolve), ("resolveParent", ResolvedPath.resolveParent),
    ]

    @Test func aNewNameIsPlacedInItsResolvedDirectoryByBoth() throws {
        let scratch = Workspace()
        mkdir(scratch.file("sub"), 0o700)
        symlink("sub", scratch.file("hop"))
        let real = try #require(ResolvedPath.realPath(scratch.path))
        for (name, resolver) in Self.resolvers {
            let placed = try resolver(scratch.file("hop/../sub/new.csv"), "report")
            #expect(placed.path == real + "/sub/new.csv" && placed.directory == real + "/sub", "\(name)")
            #expect(!placed.exists, "\(name)")
            // At the root the name is not given a second slash.
            let atRoot = try resolver("/botsi-resolved-path-test-\(getpid())", "report")
            #expect(atRoot.path == "/botsi-resolved-path-test-\(getpid())" && atRoot.directory == "/", "\(name)")
        }
    }

    @Test func bothRefuseANameThatNamesNoFileAndAMissingDirectory() {
        let scratch = Workspace()
        for (name, resolver) in Self.resolvers {
            // `resolve` follows a name that exists (`.` and `..` do), so only a trailing slash reaches it.
            let typedNames =
                name == "resolve"
                ? [scratch.file("dir/")] : [scratch.file("dir/"), scratch.path + "/.", scratch.path + "/..", "..", "."]
            for typed in typedNames {
                expectRefusal("does not name a file") { _ = try resolver(typed, "report") }
            }
            expectRefusal("does not exist; create it first", kind: .missing) {
                _ = try resolver(scratch.file("missing/new.csv"), "report")
            }
        }
    }

    /// A file in the root directory is held by "/", not by a directory of no name (which no check
    /// of the directory's owner and mode could read); a bare name by ".".
    @Test func theRootDirectoryHoldsItsFiles() throws {
        #expect(ResolvedPath.parent(of: "/journal.sqlite") == "/")
        #expect(ResolvedPath.parent(of: "/var/lib/journal.sqlite") == "/var/lib")
        #expect(ResolvedPath.parent(of: "journal.sqlite") == ".")
        let existing = try ResolvedPath.resolve("/", role: "journal")
        #expect(existing.directory == "/", "realpath of / is /, and its parent is itself")
    }
}
