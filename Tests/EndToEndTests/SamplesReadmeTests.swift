import BotsiTestSupport
import Foundation
import Testing

/// samples/README.md's commands, read from it and run through `sh` as written, from the package's
/// root, with the built binary first on PATH, HOME a directory of the test's own and the simulator
/// on a free port in place of 8080. An operator review: they named `--journal /tmp/samples.sqlite`,
/// which the tool refuses (exit 73: others can write /tmp).
@Suite("samples/README.md, as written")
struct SamplesReadmeTests {
    /// The README's `sh` blocks as logical lines (continuations joined).
    static var lines: [String] {
        let readme =
            (try? String(contentsOfFile: Locations.packageRoot + "/samples/README.md", encoding: .utf8)) ?? ""
        return readme.components(separatedBy: "```sh\n").dropFirst().flatMap { block in
            (block.components(separatedBy: "\n```").first ?? "").replacingOccurrences(of: "\\\n", with: " ")
                .split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
    }

    @Test func theSixPairsEndAsTheReadmeSays() throws {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        let workspace = Workspace()
        let home = workspace.file("home")
        try FileManager.default.createDirectory(
            atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var environment = Child.environment(key: nil)
        environment["HOME"] = home
        environment["PATH"] =
            URL(fileURLWithPath: binary).deletingLastPathComponent().path + ":"
            + (environment["PATH"] ?? "/usr/bin:/bin")

        let lines = Self.lines
        try #require(lines.count == 4, "the README's commands changed: \(lines)")
        #expect(!lines.contains { $0.contains("/tmp") }, "a journal in /tmp is refused: \(lines)")
        let simulatorLine = try #require(lines.first { $0.hasPrefix("botsi-restore simulate ") && $0.hasSuffix("&") })
        try #require(simulatorLine.contains("--port 8080"), "the README's simulator line changed: \(simulatorLine)")
        let simulator = try Child(
            simulatorLine.dropLast().replacingOccurrences(of: "--port 8080", with: "--port 0").split(separator: " ")
                .dropFirst().map(String.init), key: nil, in: workspace)
        defer {
            simulator.send(SIGTERM)
            _ = simulator.wait(timeout: 10)
        }
        let baseURL = try #require(FirstDayTests.listeningURL(simulator), "the README's simulator did not start")

        var outputs: [String] = []
        for line in lines where line != simulatorLine {
            let finished = try Child(
                ["-c", line.replacingOccurrences(of: "http://127.0.0.1:8080", with: baseURL)], key: nil,
                in: workspace, workingDirectory: Locations.packageRoot, environment: environment,
                executable: "/bin/sh"
            ).wait(timeout: 90)
            #expect(finished.status == 0, "\(line): exit \(finished.status)\n\(finished.stderr)")
            outputs.append(finished.stdout)
        }
        let table = outputs.last ?? ""
        let statuses = table.split(separator: "\n").dropFirst(2).map { $0.split(separator: " ")[2] }
        #expect(statuses.filter { $0 == "restored" }.count == 4, "\(table)")
        #expect(statuses.filter { $0 == "nothing_to_restore" }.count == 1, "\(table)")
        #expect(statuses.filter { $0 == "profile_not_found" }.count == 1, "\(table)")
        #expect(FileManager.default.fileExists(atPath: home + "/botsi/samples.sqlite"))
    }
}
