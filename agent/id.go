package agent

import (
	"fmt"
	"net"
)

// ShortID is the default worker id for a LAN IPv4 address: "w", the third
// octet, then the last octet zero-padded to three digits
// (10.10.50.150 → "w50150", 10.10.5.7 → "w5007"). The padding keeps the form
// unambiguous ("w50007" is x.x.50.7, "w5007" is x.x.5.7). It returns "" for
// an address that is not IPv4.
func ShortID(ip net.IP) string {
	v4 := ip.To4()
	if v4 == nil {
		return ""
	}
	return fmt.Sprintf("w%d%03d", v4[2], v4[3])
}

// LongID is the full worker id for a LAN IPv4 address (10.10.5.150 →
// "w10-10-5-150"). The agent uses it when the hub answers a hello carrying
// the ShortID with the error code id_taken, i.e. another IP holds the short
// form (two subnets sharing the last two octets). It returns "" for an
// address that is not IPv4.
func LongID(ip net.IP) string {
	v4 := ip.To4()
	if v4 == nil {
		return ""
	}
	return fmt.Sprintf("w%d-%d-%d-%d", v4[0], v4[1], v4[2], v4[3])
}

// LanIP returns the first non-loopback IPv4 address of an interface that is
// up, in the order the system lists interfaces, or 127.0.0.1 when there is
// none. Link-local addresses (169.254.0.0/16) are skipped: they are what a
// host gets when DHCP failed, never the address other machines reach it by.
func LanIP() net.IP {
	ifaces, err := net.Interfaces()
	if err != nil {
		return net.IPv4(127, 0, 0, 1).To4()
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		if ip := firstLanIPv4(addrs); ip != nil {
			return ip
		}
	}
	return net.IPv4(127, 0, 0, 1).To4()
}

// firstLanIPv4 picks the first usable IPv4 address of one interface.
func firstLanIPv4(addrs []net.Addr) net.IP {
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		v4 := ip.To4()
		if v4 == nil || v4.IsLoopback() || v4.IsLinkLocalUnicast() || v4.IsUnspecified() {
			continue
		}
		return v4
	}
	return nil
}
