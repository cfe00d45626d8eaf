#!/usr/bin/env python3
"""An independent implementation of Tencent's TLS-sig v2 (TLSSigAPIv2), the format of the
server-side UserSig generators apps already use: JSON, zlib, base64 with + -> *, / -> -, = -> _.

  gen    SDKAPPID SECRET USER EXPIRE TIME [USERBUF]   prints a UserSig
  verify SDKAPPID SECRET SIG                          prints the identifier if the HMAC matches, exits 1 otherwise
"""
import base64, hashlib, hmac, json, sys, zlib


def content(identifier, sdkappid, time, expire, userbuf=None):
    text = "TLS.identifier:%s\nTLS.sdkappid:%d\nTLS.time:%d\nTLS.expire:%d\n" % (identifier, sdkappid, time, expire)
    if userbuf is not None:
        text += "TLS.userbuf:%s\n" % userbuf
    return text.encode("utf-8")


def gen(sdkappid, secret, identifier, expire, time, userbuf=None):
    fields = {"TLS.ver": "2.0", "TLS.identifier": identifier, "TLS.sdkappid": sdkappid,
              "TLS.expire": expire, "TLS.time": time}
    b64_userbuf = None
    if userbuf is not None:
        b64_userbuf = base64.b64encode(userbuf.encode("utf-8")).decode("utf-8")
        fields["TLS.userbuf"] = b64_userbuf
    mac = hmac.new(secret.encode("utf-8"), content(identifier, sdkappid, time, expire, b64_userbuf), hashlib.sha256)
    fields["TLS.sig"] = base64.b64encode(mac.digest()).decode("utf-8")
    compressed = zlib.compress(json.dumps(fields).encode("utf-8"))
    return base64.b64encode(compressed).decode("utf-8").replace("+", "*").replace("/", "-").replace("=", "_")


def verify(sdkappid, secret, sig):
    raw = base64.b64decode(sig.replace("*", "+").replace("-", "/").replace("_", "="))
    fields = json.loads(zlib.decompress(raw).decode("utf-8"))
    mac = hmac.new(secret.encode("utf-8"), content(fields["TLS.identifier"], int(fields["TLS.sdkappid"]),
                   int(fields["TLS.time"]), int(fields["TLS.expire"]), fields.get("TLS.userbuf")), hashlib.sha256)
    if int(fields["TLS.sdkappid"]) != sdkappid or base64.b64encode(mac.digest()).decode("utf-8") != fields["TLS.sig"]:
        sys.exit(1)
    print(fields["TLS.identifier"])


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        print(gen(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]),
                  sys.argv[7] if len(sys.argv) > 7 else None))
    else:
        verify(int(sys.argv[2]), sys.argv[3], sys.argv[4])
