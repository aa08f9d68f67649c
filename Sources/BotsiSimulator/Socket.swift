import Dispatch
import Glibc

/// The few socket calls the server needs, with errors that say which call failed and why.
enum Socket {
    static func listen(host: String, port: Int) throws -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        let numericHost = host == "localhost" ? "127.0.0.1" : host
        guard inet_pton(AF_INET, numericHost, &address.sin_addr) == 1 else {
            throw SimulatorError("host '\(host)' is not an IPv4 address")
        }
        let descriptor = socket(
            AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw failure("socket") }
        var enable: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &enable, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let error = failure("bind to \(host):\(port)")
            close(descriptor)
            throw error
        }
        guard Glibc.listen(descriptor, 1024) == 0 else {
            let error = failure("listen")
            close(descriptor)
            throw error
        }
        return descriptor
    }

    static func localPort(_ descriptor: Int32) throws -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0 else { throw failure("getsockname") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Non-blocking, close-on-exec and no Nagle delay (a reply is one write; waiting for an ACK only adds latency).
    /// `accept4` would save the two `fcntl` calls but Glibc's Swift module does not export it.
    static func prepareAccepted(_ descriptor: Int32) {
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        var enable: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &enable, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Asks the kernel to stamp each received segment (SO_TIMESTAMPNS; on 64-bit Linux that is the
    /// `_OLD` constant, the only spelling Glibc's Swift module exports).
    static func enableReceiveTimestamps(_ descriptor: Int32) {
        var enable: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_TIMESTAMPNS_OLD, &enable, socklen_t(MemoryLayout<Int32>.size))
    }

    /// `recvmsg` into `buffer` with the kernel's receive timestamp (see `enableReceiveTimestamps`), which
    /// it sets `arrival` to, converted to the uptime clock the loop's timers use. `control` holds the
    /// ancillary data (64 bytes is enough). Returns what `recv` would.
    static func receiveTimed(
        _ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, control: UnsafeMutableRawBufferPointer,
        arrival: inout UInt64?
    ) -> Int {
        var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var message = msghdr()
        let count = withUnsafeMutablePointer(to: &vector) { vectorPointer in
            message.msg_iov = vectorPointer
            message.msg_iovlen = 1
            message.msg_control = control.baseAddress
            message.msg_controllen = control.count
            return recvmsg(descriptor, &message, 0)
        }
        guard count > 0, message.msg_controllen >= MemoryLayout<cmsghdr>.size + MemoryLayout<timespec>.size else {
            return count
        }
        let header = control.load(as: cmsghdr.self)
        guard header.cmsg_level == SOL_SOCKET, header.cmsg_type == SO_TIMESTAMPNS_OLD else { return count }
        // CMSG_DATA: the payload follows the header, which is already 8-byte aligned on 64-bit Linux.
        let stamp = control.load(fromByteOffset: MemoryLayout<cmsghdr>.size, as: timespec.self)
        var wallNow = timespec()
        clock_gettime(CLOCK_REALTIME, &wallNow)
        let age =
            (Int64(wallNow.tv_sec) - Int64(stamp.tv_sec)) * 1_000_000_000
            + (Int64(wallNow.tv_nsec) - Int64(stamp.tv_nsec))
        let uptimeNow = DispatchTime.now().uptimeNanoseconds
        // A stepped wall clock could make the age absurd; trust it only within a second.
        if age >= 0, age < 1_000_000_000, UInt64(age) < uptimeNow { arrival = uptimeNow - UInt64(age) }
        return count
    }

    /// Linger with a zero timeout: `close` then sends RST instead of FIN.
    static func setResetOnClose(_ descriptor: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    private static func failure(_ operation: String) -> SimulatorError {
        SimulatorError("\(operation) failed: \(String(cString: strerror(errno)))")
    }
}
