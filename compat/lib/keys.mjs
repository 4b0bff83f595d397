// Throwaway test keys for the compatibility suite (made with node:crypto for it;
// they protect nothing). JWK, as jose and Web Crypto import them.
export const keys = {
  "rsa": {
    "private": {
      "kty": "RSA",
      "n": "x5ySLtVkI39cDq6JpvvVSNwooOY2gkfRXZXmmQu3mFIE8hr_xHqKkvSAOhYP5nVAPwM_affkhoOAzYVn38ofpSasRbhHN-9XvXXO3cvRWClpCVkFylp7Hg4MF7d_0pbehZvYCsMe7sVil5I_lHFt8lmw7JffNAUUGwEj1DQPtBsYzUhU5g_9GKRb6SH0Y0kQqrmwwohkbHjtJgKobSwm5-3zKfGmIGwYrHVw-ruBmaFgY78-4RLn9msA2jTU7sQdWOZ_QRzA0j-61VdlkNXMnou0I8DejZJxFRmPfKMgHAzeZ3vrBoeDy_3NVMEkx7rExXeAo4phkwV9asx8O1QXTw",
      "e": "AQAB",
      "d": "SriA_jgSErmnp7VNQO1PQ0VqjgRvTih9Joeo-QxqTwIQ6OITcSSf_--3mkbM7-tfP9dC4zOQ34uVaRmxrxOV8ff-j-CyBC27jefuJpeXx2VE9ONWqA9ju_XtL-mYVyfzp1cVsb2ltCK-S9fKphIp4okRkhctzebCxnMQSuysHjJGziIi3JPMNjEJELsERnNnkGKevRsj3tNCVpXdlHaVtT5Ec4yReEubEp8EWDr6HTa-e877nnDJD0n4eBnV9zrrjUF3mj8mmefVbTKYuATW8whr3rmyy08SmOZn0B47s6ZteveIeTP48kCjzMfUc7qlNNDRgnjCjIhLD0N7GRPfUQ",
      "p": "8zswgWJK3s7jGQ0uxKMy0BVqnVr3NwexzZlBzbv2j9mgBPxG92RHbAC0-4XJlm_8rzg-9Dr_h-fS07mYHY4PntPqcIl_28nN8xb1VgiB-JrCNTE3hSKaRIEwFmEE3OYA2Ua6GCkOR-SiDImg8yBNIfK_MVTxvSjjTMGiN1egNH8",
      "q": "0hcsSMxYPtnfPRdLMPIMaWsKGSbm3Z4OEJe5SCdD-nPNUgy-YPFB35Y3y59URCQekTOKsONGBwILviN2hzq2P-V5D7zWlj9CyuZldqFnCM1hL_EDJI2plTdmNmVTidUGYOPzkZCWih4zCjSaTwiVZljA-l4APKJUEwTqZvxUdTE",
      "dp": "Tkt3Sa7COwaNw7qim1mNOb4rG4v0mBo5-dyjef5PV-7Nu80Zavk0pGd12qEuSuaxiBWq7iMvrifJja3ocVsRXCcLCD66kZ1cVivFvXPvon7ulQDKxmhlEDglqo6Aajr_evFxZeWRW0MVhsOms5xqN8tUECUvy5wlzsdl2Dq0rzE",
      "dq": "FzmilqWod8JEMI-7qzyG7Lx9kExBp2xKp8DuJbDZjf1xTEnGXhctrhcAMg16FlJb4rds9KMbYbjzLWDkQIzYCvZGTNwWaOOzcZTI0LWFG28A-HjPXSIgBjPqo8bN1mXrX5izm3r9eWVfRRiNmoEbawYSx1rO8eUMIFIhy6LHf3E",
      "qi": "M2VTefgQlRMgcdyKaQV3MJK4X7QSXqxZlk-iKl3f75fiZaKHiIxMVdWTmuXRwZh1ByW30NPwR7vmL9zyhQV2VMM_Gwz0FI23xHmujvlFutSmrkSR9yc3p8jNV60gfquu8UUyvQr6lIKRUP9jkJ7ccNsE6Bj7qa-WGo7Ag_-fWSo"
    },
    "public": {
      "kty": "RSA",
      "n": "x5ySLtVkI39cDq6JpvvVSNwooOY2gkfRXZXmmQu3mFIE8hr_xHqKkvSAOhYP5nVAPwM_affkhoOAzYVn38ofpSasRbhHN-9XvXXO3cvRWClpCVkFylp7Hg4MF7d_0pbehZvYCsMe7sVil5I_lHFt8lmw7JffNAUUGwEj1DQPtBsYzUhU5g_9GKRb6SH0Y0kQqrmwwohkbHjtJgKobSwm5-3zKfGmIGwYrHVw-ruBmaFgY78-4RLn9msA2jTU7sQdWOZ_QRzA0j-61VdlkNXMnou0I8DejZJxFRmPfKMgHAzeZ3vrBoeDy_3NVMEkx7rExXeAo4phkwV9asx8O1QXTw",
      "e": "AQAB"
    }
  },
  "ec": {
    "private": {
      "kty": "EC",
      "x": "UMMiSM6L9J_5YdzK07zFY8skTOIDq9ORme0_DGFzNjc",
      "y": "4COdS5_m1OQKH4oYArU-9Cae9oktPrYBldtR9WjgSys",
      "crv": "P-256",
      "d": "MD-CU4wVciSw-penKfpBT4OJ8ZQQAkj0IlhJLNS0e2Q"
    },
    "public": {
      "kty": "EC",
      "x": "UMMiSM6L9J_5YdzK07zFY8skTOIDq9ORme0_DGFzNjc",
      "y": "4COdS5_m1OQKH4oYArU-9Cae9oktPrYBldtR9WjgSys",
      "crv": "P-256"
    }
  },
  "ed": {
    "private": {
      "crv": "Ed25519",
      "d": "gy0vrG9N2xCdzEF4eaAHawYEzcquA2251piuRTHqxHM",
      "x": "ur_VVfXsOhMLhUyJ-62saXi9ykRcQV7Bn5UMHA2HsJI",
      "kty": "OKP"
    },
    "public": {
      "crv": "Ed25519",
      "x": "ur_VVfXsOhMLhUyJ-62saXi9ykRcQV7Bn5UMHA2HsJI",
      "kty": "OKP"
    }
  }
};
export const hmacSecret = "compat-suite-hmac-secret-0123456789";
