"""Which host names count as a way to reach someone.

A curated suffix list is used instead of the full Public Suffix List on purpose: many of the
~1,500 public suffixes are ordinary words (data, name, run, save, show) that turn attribute
access in code snippets (`response.data`, `self.name`) into false positives. The list below
keeps every two-letter country code plus the generic suffixes contact domains actually use.
"""

from __future__ import annotations

import ipaddress

# Every ISO country-code suffix that is delegated (taken from the Public Suffix List).
_COUNTRY_CODES = frozenset(
    """
    ac ad ae af ag ai al am ao aq ar as at au aw ax az ba bb be bf bg bh bi bj bm bn bo br bs
    bt bv bw by bz ca cc cd cf cg ch ci cl cm cn co cr cu cv cw cx cy cz de dj dk dm do dz ec
    ee eg es et eu fi fj fm fo fr ga gb gd ge gf gg gh gi gl gm gn gp gq gr gs gt gu gw gy hk
    hm hn hr ht hu id ie il im in io iq ir is it je jo jp ke kg ki km kn kp kr kw ky kz la lb
    lc li lk lr ls lt lu lv ly ma mc md me mg mh mk ml mn mo mp mq mr ms mt mu mv mw mx my mz
    na nc ne nf ng ni nl no nr nu nz om pa pe pf ph pk pl pm pn pr ps pt pw py qa re ro rs ru
    rw sa sb sc sd se sg sh si sj sk sl sm sn so sr ss st su sv sx sy sz tc td tf tg th tj tk
    tl tm tn to tr tt tv tw tz ua ug uk us uy uz va vc ve vg vi vn vu wf ws ye yt zm zw
    """.split()
)

# Generic suffixes that are mostly code-safe: rarely an attribute or file-extension name.
_STRONG_GENERIC = frozenset("com net org edu gov mil int xyz dev onion".split())

# Generic suffixes that are also English words; `self.app` or `log.info` must not trip them.
WORD_SUFFIXES = frozenset(
    """
    info biz mobi pro top site online website store shop tech app cloud agency digital
    solutions services software systems tools live bot studio design media network world
    global company consulting group team works blog news space fun club academy center
    expert guru ninja rocks zone today life
    """.split()
)

SUFFIXES = _COUNTRY_CODES | _STRONG_GENERIC | WORD_SUFFIXES

# Country codes that double as file extensions or short code words: `main.py`,
# `README.md`, `setup.sh`, `MANIFEST.in`, `user.id`. Only a bare `name.xx` is excused;
# `shop.acme.py` or `acme.com.pl` is still reported.
AMBIGUOUS_SHORT = frozenset(
    "py md sh rs pl pm pt ml mm cc tf mk am ac sc gs st ps mo la nc so in id do".split()
)

# First labels that mark `x.word` as attribute access in a snippet, not a host name.
CODE_RECEIVERS = frozenset(
    """
    self this cls os sys np pd df plt ax fig app req request res response resp ctx context obj
    user args kwargs opts options config cfg conf settings logger log logging console window
    document module exports process event evt err error data result results client session db
    model item node el elem json math torch tf re str list dict file path props state env job
    task row record msg message payload body params query router api http server cursor conn
    page browser driver spider soup worker queue cache store
    """.split()
)

# Product names that happen to be spelled like a domain.
TECH_NAMES = frozenset({"asp.net", "vb.net", "ado.net", "system.net", "socket.io"})

# Large public sites named as a data source ("scrape prices from amazon.com") reach no
# party. Only the bare name is excused: any path (github.com/someone) is still reported.
WELL_KNOWN_SITES = frozenset(
    """
    amazon.com ebay.com etsy.com walmart.com target.com bestbuy.com alibaba.com aliexpress.com
    shopify.com booking.com airbnb.com expedia.com tripadvisor.com yelp.com zillow.com
    indeed.com glassdoor.com craigslist.org linkedin.com twitter.com x.com facebook.com
    instagram.com tiktok.com youtube.com reddit.com wikipedia.org google.com bing.com
    github.com gitlab.com bitbucket.org stackoverflow.com pypi.org npmjs.com docker.com
    huggingface.co kaggle.com arxiv.org medium.com dev.to crunchbase.com producthunt.com
    stripe.com paypal.com openai.com anthropic.com slack.com notion.so sentry.io fly.io
    heroku.com vercel.com netlify.com render.com imdb.com nytimes.com reuters.com
    bloomberg.com bbc.co.uk sec.gov data.gov census.gov
    amazon.co.jp rakuten.co.jp yahoo.co.jp mercari.com naver.com daum.net coupang.com
    baidu.com taobao.com tmall.com jd.com weibo.com zhihu.com bilibili.com shopee.co.th
    lazada.co.th
    """.split()
)

# RFC 2606 / RFC 6761 names and private-use suffixes: they reach nobody.
_RESERVED_SUFFIXES = frozenset("example test invalid localhost local internal lan".split())
_EXAMPLE_SLDS = frozenset({"example.com", "example.net", "example.org"})


def is_reserved(host: str) -> bool:
    """True for localhost, documentation domains and private-use suffixes."""
    host = host.lower().rstrip(".")
    labels = host.split(".")
    if labels[-1] in _RESERVED_SUFFIXES or host == "localhost":
        return True
    return ".".join(labels[-2:]) in _EXAMPLE_SLDS


def is_reportable_domain(host: str, *, has_path: bool) -> bool:
    """Judge a bare host name (no scheme) found in prose."""
    host = host.lower().rstrip(".")
    labels = host.split(".")
    if len(labels) < 2 or labels[-1] not in SUFFIXES:
        return False
    if any(not label or label[0] == "-" or label[-1] == "-" for label in labels):
        return False
    if is_reserved(host) or host in TECH_NAMES:
        return False
    if len(labels) == 2:
        name, suffix = labels
        if suffix in AMBIGUOUS_SHORT:
            return False
        if suffix in WORD_SUFFIXES and (len(name) == 1 or name in CODE_RECEIVERS):
            return False
    return has_path or host not in WELL_KNOWN_SITES


def is_reportable_url_host(host: str) -> bool:
    """Judge the host of a URL with a scheme or a www. prefix: anything public counts."""
    host = host.lower().strip("[]").rstrip(".")
    if not host or is_reserved(host):
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return True
    return address.is_global


# Public DNS resolvers are configuration, not a way to reach a party.
_WELL_KNOWN_IPS = frozenset(
    "1.1.1.1 1.0.0.1 8.8.8.8 8.8.4.4 9.9.9.9 149.112.112.112 208.67.222.222 208.67.220.220"
    " 2606:4700:4700::1111 2606:4700:4700::1001 2001:4860:4860::8888 2001:4860:4860::8844".split()
)


def is_public_ip(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return address.is_global and str(address) not in _WELL_KNOWN_IPS
