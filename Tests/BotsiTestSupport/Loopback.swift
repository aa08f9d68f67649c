import Foundation
import Glibc

/// Loopback TCP for the tests' own servers and raw clients: blocking sockets on 127.0.0.1, closed
/// on exec so a program a test starts never holds one.
public enum Loopback {
    /// A socket bound to 127.0.0.1 on a port the kernel picks, and that port; listening with
    /// `backlog` when given. The caller closes the descriptor.
    public static func bind(listening backlog: Int32? = nil) throws -> (descriptor: Int32, port: Int) {
        let descriptor = try newSocket()
        var address = socketAddress(host: "127.0.0.1", port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                Glibc.bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound, backlog.map({ listen(descriptor, $0) == 0 }) ?? true else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw TestSupportError("cannot bind a loopback port: \(reason)")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A port free right now, for a server another process will bind: it may be taken again before
    /// that server binds it, so the caller tries again when the server does not come up.
    public static func freePort() throws -> Int {
        let (descriptor, port) = try bind()
        close(descriptor)
        return port
    }

    /// A connected socket to `host:port`; with `receiveTimeoutSeconds`, a read that waits longer
    /// fails with EAGAIN. The caller closes the descriptor.
    public static func connect(
        port: Int, host: String = "127.0.0.1", receiveTimeoutSeconds: Int? = nil
    ) throws -> Int32 {
        let descriptor = try newSocket()
        if let receiveTimeoutSeconds {
            var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        var address = socketAddress(host: host, port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw TestSupportError("cannot connect to \(host):\(port): \(reason)")
        }
        return descriptor
    }

    private static func newSocket() throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestSupportError("socket failed: \(String(cString: strerror(errno)))") }
        return descriptor
    }

    private static func socketAddress(host: String, port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        return address
    }
}
