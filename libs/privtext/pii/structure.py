"""Mail and chat structure for detection: what a line is decides what its parts are.

Real mail is not prose. Its headers, quote attributions, sign-offs and list footers, and a chat's speaker
labels, hold personal values in fixed places, and dates, times and time zones that look like addresses,
phone numbers or names to recognizers built for prose ("13 Sep 2002" is a house number, a street word and
a building number to a street pattern; "-0400" a phone fragment; "Sun" a person to spaCy). ``analyze``
reads the structure once per document and returns

* ``spans``: values the structure types for certain (score ``STRUCTURE_SCORE``, above every recognizer,
  so Presidio-style conflict resolution -- the higher score wins -- keeps them):
  - a whole date expression (RFC 2822 "Fri, 13 Sep 2002 15:01:18 -0400 (EDT)", "August 14, 2002 3:45 PM",
    "14/08/2002 10:12", ctime "Wed Aug 14 10:12:33 2002", a time "08:53") -> one DATE_TIME span, its
    weekday and time zone included, so a Date: header is one date;
  - From/To/Cc/Bcc/Reply-To/Sender header entries: display name -> PERSON (quoted "Last, First" is one
    name), address -> EMAIL_ADDRESS;
  - quote attributions ("On <date>, <who> wrote:", "<who> wrote:", "At <time> <date>, <who> wrote:", a webmail's
    "Quoting <who> <address>:"):
    the date -> DATE_TIME, who -> PERSON / EMAIL_ADDRESS;
  - sign-offs ("Thanks,\\nBob", "Cheers, Ann", a name under the "-- " signature line) and chat cues
    ("call me X", "my name is x", "this is X" with a known first name), a chat's speaker labels ("jojo: hi",
    "[12:01] Anna: ok" in a document most of whose lines are turns; "A:", "user2:", "Speaker 1:" are
    roles) and sign-ins ("*** X has joined") -> PERSON, lower case included; name words of any script, with
    their combining marks (Devanagari and Thai vowel signs); in a script without case (Han, Hangul, Thai,
    Devanagari, Arabic, Hebrew) a word counts as capitalised, and after a weak cue ("this is", "I'm") needs
    no first-name list (none is shipped for those scripts);
  - in a text mostly in a cased script (Latin, Cyrillic, Greek: its other letters more than twice those of
    scripts without case), every run of one to four words of a script without case -> PERSON: case cannot
    tell a name there, and the rule errs on the person's side (a quoted foreign word is replaced too; a text
    written in that script is left to the other detectors);
* ``protected``: regions that are never part of another type's value: time zones outside a date
  ("(EDT)", "-0400" after a year or time), version and revision numbers ("Revision 1.2.3.4",
  "$Id: x.c,v 1.12.2.3"), laughter ("hahaha", "lol"), generic chat speaker labels ("User:", "A:"), the
  software named in X-Mailer / User-Agent headers, a list's tag in a subject ("Subject: Re: [FoRK] ..."), and
  the mailing lists' own addresses and pages (``public_addresses``): an address a list footer gives ("FoRK
  mailing list\nfork@xent.com", "To unsubscribe, e-mail: users-unsubscribe@httpd.apache.org"), a role
  mailbox of RFC 2142 ("news@", "postmaster@") or a list command of RFC 2369 conventions ("-request",
  "-unsubscribe", "-help"), an organisation's numbered role or bulk sender ("sales2@", "offers726@") at no
  free-mail host, a list's own address beside one of its command addresses, or one at a group service's host
  ("yahoogroups.com"), in every occurrence in the document, a list's name before "mailing list", a list's web
  page ("/mailman/listinfo/x", no query, no "@"), and a number the text calls toll-free. These are no person's
  values: they reach every subscriber of a list, and an organisation's role mailbox or service line is no one's
  own. A display name of such an address is no person either unless it holds a known first name.

``apply`` (after the recognizers and ``refine``) cuts every other span out of the protected regions and
out of the structure's date spans, keeping the longest remaining piece when it still holds a word, and
drops spans that cannot be entities whatever the recognizer said: no letter or digit ("--", "..."), a street
address without a letter (a number left when a turn's label is cut off: "we're like 3\nSpeaker 2"), a
weekday, month or zone name, a relative time ("tonight"), a kinship word ("Mum") or a code ("Q3") alone as a
name, place or organisation, a URL glued to a word ("apt.conf" ->
"apt.co"), holding an ellipsis, or a bare file name whose extension is also a top-level domain.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import groupby

from privtext.pii.refine import NOT_NAMES, RELATIVE_TIME


def _classes(*groups: tuple[str, ...], start: int = 0, limit: int = 0x10000) -> list[str]:
    """For each group of Unicode categories, a regex character-class body of the code points from ``start`` to
    ``limit`` in it (assigned ones only: Python's Unicode tables decide, as they decide ``\\w``)."""
    categories = {cp: unicodedata.category(chr(cp)) for cp in range(start, limit)}
    out = []
    for group in groups:
        runs = groupby(range(start, limit), key=lambda cp: categories[cp] in group)
        spans = [(c[0], c[-1]) for member, c in ((m, list(r)) for m, r in runs) if member]
        out.append("".join(f"\\U{a:08x}" + (f"-\\U{b:08x}" if b > a else "") for a, b in spans))
    return out


# combining marks (Devanagari and Thai vowel signs, Hebrew points): inside a word, though \w has none of them;
# letters of scripts without case (Han, Hangul, Kana, Thai, Devanagari, Arabic, Hebrew, ...): capitalisation,
# the name cue of cased scripts, says nothing there (+ the CJK extension planes)
_MARKS, _UNCASED = _classes(("Mn", "Mc", "Me"), ("Lo",))
_UNCASED += _classes(("Lo",), start=0x20000, limit=0x32000)[0]  # the CJK extensions' assigned ideographs only
_UNCASED_WORD = rf"[{_UNCASED}][{_UNCASED}{_MARKS}]*"
_UNCASED_RUN = re.compile(rf"(?<![\w{_MARKS}]){_UNCASED_WORD}(?:[ \t]+{_UNCASED_WORD}){{0,3}}(?![\w{_MARKS}])")
_UNCASED_LETTER = re.compile(f"[{_UNCASED}]")
_LETTER = re.compile(r"[^\W\d_]")


def _marked(pattern: str) -> str:
    """``pattern`` with its name-word classes taking combining marks too ("राहुल", "สมชาย")."""
    return (pattern.replace(r"[\w'’-]", rf"[\w'’{_MARKS}-]").replace(r"[\w'’.-]", rf"[\w'’.{_MARKS}-]")
            .replace(r"[\w.'’-]", rf"[\w.'’{_MARKS}-]"))


STRUCTURE_SCORE = 0.99  # above every recognizer (spaCy 0.85, patterns <= 0.96); e-mail/URL-with-user stay 1.0

_WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
                  "Mon", "Tue", "Tues", "Wed", "Thu", "Thur", "Thurs", "Fri", "Sat", "Sun")
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December", "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct",
                "Nov", "Dec")
_ZONE_NAMES = ("UTC", "GMT", "UT", "EST", "EDT", "CST", "CDT", "MST", "MDT", "PST", "PDT", "AST", "ADT", "AKST",
               "AKDT", "HST", "BST", "IST", "CET", "CEST", "EET", "EEST", "WET", "WEST", "MET", "MEST", "MSK",
               "JST", "KST", "HKT", "SGT", "AEST", "AEDT", "ACST", "AWST", "NZST", "NZDT")
_CALENDAR_WORDS = frozenset(w.casefold() for w in (*_WEEKDAY_NAMES, *_MONTH_NAMES, *_ZONE_NAMES))


def _alt(words) -> str:
    return "|".join(sorted(words, key=len, reverse=True))


_WD = rf"(?:{_alt(_WEEKDAY_NAMES)})\.?"
_MON = rf"(?:{_alt(_MONTH_NAMES)})\.?"
_TIME = r"(?<![\d:.])\d{1,2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:[ \t]?(?:[AaPp]\.?[Mm]\.?)(?!\w))?(?![\d:])"
_OFFSET = r"(?:[+-](?:0\d|1[0-4]):?[0-5]\d)(?!\d)"
_ZONE_NAME = rf"\b(?:{_alt(_ZONE_NAMES)})\b"
_ZONE = rf"(?:{_OFFSET}|(?:GMT|UTC)[+-]\d{{1,2}}(?::?\d{{2}})?\b|\({_ZONE_NAME}\)|{_ZONE_NAME})"
_ZONES = rf"(?:[ \t]+{_ZONE}){{0,2}}"
_AT_TIME = rf"(?:,?[ \t]+(?:at[ \t]+)?{_TIME}{_ZONES})?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = re.compile(
    rf"(?i:(?<![\w/.-])(?:{_WD},?[ \t]+)?(?:"
    rf"{_DAY}[ \t-]+{_MON},?[ \t-]+(?:\d{{4}}|\d{{2}}(?!:))"  # 13 Sep 2002
    rf"|{_MON}[ \t]+{_DAY},?[ \t]+\d{{4}}"  # August 14, 2002
    rf"|{_MON}[ \t]+{_DAY}[ \t]+{_TIME}{_ZONES}[ \t]+\d{{4}}"  # ctime: Aug 14 10:12:33 2002
    rf"|\d{{4}}-\d{{2}}-\d{{2}}(?:[T ]{_TIME})?|\d{{4}}/\d{{1,2}}/\d{{1,2}}"  # ISO, 2002/08/14
    rf"|\d{{1,2}}/\d{{1,2}}/(?:\d{{4}}|\d{{2}})|\d{{1,2}}\.\d{{1,2}}\.\d{{4}}"  # 8/14/2002, 14.08.2002
    rf"){_AT_TIME}(?![\w/]|\.\d)"
    rf"|(?:{_WD},?[ \t]+)?{_TIME}{_ZONES})")  # a time: 15:01, 3:45 PM, Wed 10:12
_ZONE_ALONE = re.compile(rf"\({_ZONE_NAME}\)|(?-i:{_ZONE_NAME})|(?<=\d[ \t]){_OFFSET}")
_VERSION = re.compile(
    r"(?i)(?:\b(?:rev(?:ision)?|version|ver|release|cvs|tag|build|patch|branch|v|kernel|linux|perl|python|gcc|glibc|"
    r"fixed[ \t]+in)[.:]?[ \t]*|,v[ \t]+|\$\w+:[^$\n]*?)"
    r"(?P<v>\d+(?:\.\d+){1,7})(?![\w.])"
    r"|(?P<before>(?<![\w.])\d+(?:\.\d+){1,7})(?=-pre\d|[ \t]+(?i:RPMs?|packages?|release|kernel|branch|tree)\b)"
    r"|(?P<long>(?<![\w.])(?!\d{2}(?:\.\d{2}){4}(?![\w.]))\d+(?:\.\d+){4,}(?![\w.]))")  # not a phone: 05.06.52.16.25
_LAUGHTER = re.compile(r"(?i)(?<!\w)(?:a?(?:h+a+){2,}h*|a?(?:a+h+){2,}|(?:he){2,}h?|(?:hi){3,}|(?:ja){2,}j?|(?:ka){2,}"
                       r"|lo+l+z?|lmf?a+o+|rofl|xd+|heh+|hah)(?!\w)")
_ROLE = re.compile(r"(?i)(?:user|agent|customer|speaker|person|participant|bot|system|support|human|assistant|client|"
                   r"operator|rep|guest|me|them|[a-d])(?:[ _-]?\d{1,3})?")
# a chat turn: "[12:01] label: text"; a document most of whose lines are turns is a chat
_TURN = re.compile(r"(?m)^[ \t]*(?:\[[^\]\n]{1,24}\][ \t]*)?(?P<label>[^\W_][\w.'’-]*(?:[ \t][^\W_][\w.'’-]*)?)"
                   r"[ \t]*:[ \t]")
_SIGN_IN = re.compile(r"(?im)^[ \t]*(?:\*{1,3}[ \t]*|\[)?(?P<name>[^\W_][\w.'’-]*(?:[ \t][^\W_][\w.'’-]*)?)[ \t]+"
                      r"(?:has[ \t]+(?:joined|left)|signed[ \t]+(?:in|out)|is[ \t]+now[ \t]+(?:online|offline|away))\b")
# field labels that open lines of mail, forms and logs: never a chat speaker
_FIELD_LABELS = frozenset("from to cc bcc date sent subject reply-to sender message-id re fwd fw note ps p.s "
                          "importance x-mailer content-type mime-version organization message attachment attachments "
                          "error warning question answer update edit example result results status summary location "
                          "time when where "
                          "phone tel fax email e-mail mobile web url address title topic todays topics home work "
                          "office desk cell".split())
# a stage direction as a whole chat turn ("(Grabs popcorn.)", "*rolls eyes*"): its first word is capitalised
# because it opens the direction, and is an action, not a name
_STAGE = re.compile(r"[ \t]*(?:\((?P<p>[^\W\d_][\w'’-]*)[ \t]+[^()\n]*\)|\*(?P<a>[^\W\d_][\w'’-]*)[ \t]+[^*\n]*\*)"
                    r"[ \t]*$", re.MULTILINE)

# the software header values ("X-Mailer: Microsoft Outlook IMO"): a program, not a person or an organisation's value
_SOFTWARE_HEADER = re.compile(r"(?im)^(?:X-Mailer|User-Agent|X-Newsreader)[ \t]*:[^\n]*")
# RFC 2142 role mailboxes and RFC 2369-style list command addresses: an organisation's or a list's, no one's own
_ROLE_WORD = (r"postmaster|hostmaster|abuse|noc|security|usenet|news|webmaster|www|uucp|ftp|info|marketing|sales|"
              r"support|no-?reply|do-?not-?reply|mailer-daemon|majordomo|listserv|listproc")
_LIST_COMMAND = r"request|owner|admin|bounces?|unsubscribe|subscribe|help|digest"
_ROLE_LOCAL = re.compile(rf"(?i)(?:{_ROLE_WORD})|[\w.+-]+-(?:{_LIST_COMMAND}|users|list|talk|devel|announce|discuss)")
# an organisation's sender: a role's with a campaign's or a shard's number ("sales2@"), or a bulk sender's named by
# what it sends ("offers726@", "newsletter@"); at a free-mail host such a name ("deals4u@", "news12@") is
# someone's own account
_SENDER_LOCAL = re.compile(rf"(?i)(?:(?:{_ROLE_WORD})[._-]?\d{{1,6}}|(?:offers?|deals?|promos?|promotions?|"
                           r"newsletters?|specials?|alerts?|notifications?|updates?)(?:[._-]?\d{1,6})?)")
_FREE_MAIL = re.compile(r"(?i)(?:[\w-]+\.)*(?:gmail|googlemail|yahoo|ymail|hotmail|outlook|live|msn|aol|icloud|me|mac|"
                        r"gmx|web|mail|yandex|protonmail|proton|zoho|qq|163|126|comcast|earthlink|btinternet|free|"
                        r"orange|wanadoo|eircom|netscape|t-online|libero|laposte)\.[a-z]{2,3}(?:\.[a-z]{2})?")
# a list command address (RFC 2369: "users-unsubscribe@host") names its list's own address ("users@host")
_COMMAND_ADDRESS = re.compile(rf"(?i)(?P<list>[\w.+-]+)-(?:{_LIST_COMMAND})")
# a number the text calls toll-free ("Call toll free 1-800-...", "freephone 0800 ..."): a business's service line,
# no one's own (its subscriber pays for the calls it receives). Not the toll-free codes alone: a made-up number in
# a template may have one
_TOLL_FREE = re.compile(r"(?i:toll[- \t]?free|freephone|freecall)(?:[ \t]+(?i:number|no\.?|line))?[ \t]*"
                        r"(?::|(?i:at|on))?[ \t]*(?P<cued>\+?[\d(][\d \t().-]{5,18}\d)(?![\d-])")
# a group service's host holds groups only (a "lists." host may hold members' mailboxes too: not one of these)
_LIST_HOST = re.compile(r"(?i)(?:yahoogroups|googlegroups)\.com")
# a list footer gives the list's address: "<List> mailing list\n<addr>", "Send <List> mailing list submissions
# to\n\t<addr>", "To unsubscribe, e-mail: <addr>", "For additional commands, e-mail: <addr>", "To unsubscribe
# from this group, send an email to:\n<addr>"
_LIST_NAME = re.compile(r"(?im)^[ \t]*(?P<list>[^\n]{1,60}?)[ \t]+mailing[ \t]+list[ \t]*$")
_FOOTER_CUE = re.compile(r"(?i)(?:(?:^|\n)[ \t]*(?:[^\s@]+[ \t]+){1,3}mailing[ \t]+list|mailing[ \t]+list[ \t]+"
                         r"submissions[ \t]+to|(?:to[ \t]+unsubscribe|additional[ \t]+commands)[^\n]{0,40}?"
                         r"(?:e-?mail|to)[ \t]*:?)[ \t]*\n?[ \t]*$")
# a list's tag in a subject ("Subject: Re: [FoRK] ...", "[Spamassassin-talk]"): the list's name, no one's
_SUBJECT_TAG = re.compile(r"(?im)^Subject:[ \t]*(?:(?:re|fwd?|aw|sv)[ \t]*:[ \t]*)*\[(?P<tag>[^\[\]\n]{1,40})\]")
_LIST_PAGE = re.compile(r"(?i)\bhttps?://[\w.-]+(?::\d+)?/(?:[\w.-]+/)?(?:mailman|lists?)/(?:listinfo|options)/"
                        r"[\w.-]+/?(?![^\s)>\]])")
# e-mail headers with people in them; Date/Sent values are dates
_HEADER = re.compile(r"(?im)^(?P<label>From|To|Cc|Bcc|Reply-To|Sender|Date|Sent)[ \t]*:[ \t]*(?P<value>[^\n]*"
                     r"(?:\n[ \t]+[^\n]*)*)")
_ADDRESS = r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+"
_ENTRY = re.compile(rf"(?P<name>\"[^\"\n]*\"|[^<>\[\],;\"@\n]*?)[ \t]*(?:<(?:mailto:)?(?P<a1>{_ADDRESS})>|"
                    rf"\[mailto:(?P<a2>{_ADDRESS})\])"
                    rf"|(?P<a3>{_ADDRESS})(?:[ \t]+\((?P<comment>[^()]*)\))?")
# "On <date>, <who> wrote:" / "At 10:12 AM 8/14/2002 -0400, <who> wrote:" / "<who> wrote:"
_WROTE = re.compile(r"(?im)^(?P<quote>[ \t>|]*)(?P<body>[^\n]{1,200}?)[ \t]+(?:wrote|writes|said|schrieb|a écrit|"
                    r"escribió|scrisse)[ \t]*:[ \t]*$")
# a webmail's attribution (Horde IMP): "Quoting <who> <address>:"; the word is the form's, never the writer's
_QUOTING = re.compile(r"(?m)^(?P<quote>[ \t>|]*)(?P<lead>Quoting)[ \t]+(?P<body>[^\n]{1,200}?)[ \t]*:[ \t]*$")
_LEAD = re.compile(r"(?i)(?:-+[ \t]*)?(?:On|At|Am|Le|El|Il)[ \t]+")
_IN_MESSAGE = re.compile(r"(?i)In[ \t]+(?:message|article)[ \t]+<[^<>\n]*>[ \t]*,?[ \t]*")  # nn/exmh, Usenet
_WORDS = re.compile(r"[^\W\d_]+")
_SIGN_OFF = (r"(?:thanks(?:[ \t]+(?:again|a[ \t]+lot|in[ \t]+advance|so[ \t]+much))?|thank[ \t]+you|thx|tia|cheers|"
             r"regards|(?:best|kind|warm|warmest|many)[ \t]+(?:regards|wishes|thanks)|best|sincerely(?:[ \t]+yours)?|"
             r"yours(?:[ \t]+(?:truly|sincerely))?|love|take[ \t]+care|ciao|greetings|hth|rgds|br|ta|-+)")
_NAME_LINE = _marked(r"(?P<name>[^\W\d_][\w'’.-]*(?:[ \t]+[^\W\d_][\w'’.-]*){0,2})")
_SIGNED_BELOW = re.compile(rf"(?im)^[ \t]*{_SIGN_OFF}[ \t]*[,.!:-]*[ \t]*\n(?:[ \t]*\n)?[ \t]*-?[ \t]*{_NAME_LINE}"
                           rf"[ \t]*$")
_SIGNED_SAME_LINE = re.compile(rf"(?im)^[ \t]*{_SIGN_OFF}[ \t]*,[ \t]*{_NAME_LINE}[ \t]*[.!]?[ \t]*$")
# a name alone as a mail's last paragraph ("-Joan", "-- Darko", "caroline", "C."): after a blank line, and
# followed only by blank lines and the end, a signature or footer rule, a quoted or forwarded message (its
# attribution: "On ...", "At ...", "Quoting X:", "In message <id>, X writes:", "X wrote:"), or a list's footer
_ONE_OR_TWO_WORDS = _marked(r"[^\W\d_][\w'’-]*(?:[ \t]+[^\W\d_][\w'’-]*)?")
_SIGNED_ALONE = re.compile(rf"\n[ \t]*\n[ \t]*(?:-{{1,2}}[ \t]*)?(?P<name>[A-Z]\.|{_ONE_OR_TWO_WORDS})[ \t]*"
                           r"(?=(?:\n[ \t]*)*\Z|(?:\n[ \t]*)+(?:--|__|==|>|On[ \t]|At[ \t]|From:|Quoting[ \t]|"
                           r"In[ \t]+(?:message|article)[ \t]|To[ \t]+unsubscribe|"
                           r"[^\n]{1,200}?[ \t](?:wrote|writes|said)[ \t]*:[ \t]*(?:\n|\Z)))")
# a greeting paragraph "jason -", "Hi Tiffany,", "Dear Ms Lee,": a name, then a comma or dash and a blank line
_GREETING = re.compile(r"(?i)(?:\A|\n[ \t]*\n)[ \t]*(?P<hello>(?:hi|hey|hello|dear|morning|hiya|yo)[ \t]+)?"
                       rf"(?P<name>{_ONE_OR_TWO_WORDS})[ \t]*(?:,|[ \t]-+)[ \t]*\n[ \t]*\n")
# who a greeting or a closing line addresses when it is no person
_GROUPS = frozenset("all everyone everybody folks guys team people list friends colleagues sir madam sirs gentlemen "
                    "ladies there y'all yall world mate mates buddy dude man pal".split())
_STRONG_CUE = re.compile(_marked(r"(?i)\b(?:call[ \t]+me|my[ \t]+name[ \t]+is|my[ \t]+name'?s|name'?s|"
                                 r"they[ \t]+call[ \t]+me|known[ \t]+as|i[ \t]+go[ \t]+by)[ \t]+"
                                 r"(?P<name>[^\W\d_][\w'’-]*)(?:[ \t]+(?P<last>[^\W\d_][\w'’-]*))?"))
_WEAK_CUE = re.compile(_marked(r"(?i)\b(?:this[ \t]+is|it'?s|i[ \t]+am|i'?m|im|hi|hey|hello|thanks|thank[ \t]+you|"
                               r"bye)[ \t]*,?[ \t]+"
                               r"(?P<name>[^\W\d_][\w'’-]*)(?:[ \t]+(?P<last>(?-i:[A-Z][a-z]+)|[^\W\d_][\w'’-]*))?"))
_EDGE = " \t\n\"',;:-"
_SLANG = frozenset("ok okay k kk nice cool yes yeah yep yup nah nope no hey hi hello thanks thx ty pls plz btw omg u "
                   "ur tho though lmk idk imo haha lol sure great fine good fyi ftw tbh smh irl jk nvm ikr afaik iirc "
                   "fml brb gtg ttyl wtf wth idc ily np ofc".split())
# field labels of mail and forms that spaCy labels an organisation or a person ("SSN", "IBAN", "PLZ")
_FORM_LABELS = frozenset("ssn iban bic swift plz zip tel fax phone email e-mail mobile cell subject re fwd fw cc bcc "
                         "url ip id dob vat anschrift adresse address ps p.s".split())
# mail and software words spaCy labels an organisation ("FREE", "API", "CVS", "LIMITED TIME OFFER", "X-Mailer")
_NOT_ORG_WORDS = frozenset("free api cvs fyi faq asap changelog x-mailer mailer limited time offer now only today new "
                           "rpm rpms html http url cpu gui sdk ide os tia imo imho btw".split())
# kinship and household words a writer uses for a person ("Mum says hello"): a relation, no one's name
_KINSHIP = frozenset("mum mom mommy mummy mama dad daddy papa mother father grandma granny grandpa grandad "
                     "auntie uncle sis bro hubby wifey".split())
_CODE = re.compile(r"[A-Z]{1,3}\d{1,4}")  # "Q3", "H1", "FY02": a quarter, half or model code, no name
_FILE_TLDS = frozenset("py pl pm sh md rs cc cs so am in ps js ts go rb ml mk io sc st ai pdf cf".split())
_URL_PARTS = re.compile(r"(?i)^(?:[a-z][a-z0-9+.-]*://|www\d?\.)|/")


@dataclass(frozen=True)
class Structure:
    """What the structure of one document says (offsets into it)."""

    spans: list[tuple[str, int, int]]  # (entity type, start, end) at STRUCTURE_SCORE
    protected: list[tuple[int, int]]  # regions no other span may cover (not personal: dates have spans)


def analyze(text: str, known_first_names: frozenset[str], not_names: frozenset[str],
            english: frozenset[str] = frozenset(), word_names: frozenset[str] = frozenset()) -> Structure:
    """The structure's spans and protected regions of ``text`` (``known_first_names`` casefolded). ``english``:
    lower-case English words (a greeting's lower-case word that is none names the addressee: "Hello steph,",
    "gilli -"; "Dear reader," does not); ``word_names``: casefolded given names that are also words or calendar
    names ("Mark", "Will", "Jan"), names in a sign-off's or a greeting's place only."""
    spans: list[tuple[str, int, int]] = []
    for m in _DATE.finditer(text):
        if _calendar_numbers(m.group()):
            spans.append(("DATE_TIME", m.start(), m.end()))
    dated = [(s, e) for _, s, e in spans]
    protected = [r for r in _zones_and_noise(text) if not _inside(r, dated)]
    public = public_addresses(text)
    protected += _public_regions(text, public)
    protected += [m.span("tag") for m in _SUBJECT_TAG.finditer(text)]
    for m in _HEADER.finditer(text):
        if m.group("label").lower() not in ("date", "sent"):
            spans += _address_list(text, m.start("value"), m.end("value"), public, known_first_names)
    for m in _WROTE.finditer(text):
        spans += _attribution(text, m.start("body"), m.end("body"), not_names, public, known_first_names)
    for m in _QUOTING.finditer(text):
        protected.append((m.start("lead"), m.end("lead")))
        spans += _attribution(text, m.start("body"), m.end("body"), not_names, public, known_first_names)
    protected += [(s, e) for kind, s, e in spans if kind == "PUBLIC"]  # a list's or role's display name
    spans = [span for span in spans if span[0] != "PUBLIC"]
    for rx in (_SIGNED_BELOW, _SIGNED_SAME_LINE):
        for m in rx.finditer(text):
            if _addressee(m.group("name")) and _is_name(m.group("name"), known_first_names, not_names,
                                                        lower_ok=True, any_word=True, also=word_names):
                spans.append(("PERSON", m.start("name"), m.end("name")))
    for m in _SIGNED_ALONE.finditer(text):
        name = m.group("name")
        if re.fullmatch(r"[A-Z]\.", name) or _addressee(name) and _is_name(
                name, known_first_names, not_names, lower_ok=True, any_word=True, also=word_names):
            spans.append(("PERSON", m.start("name"), m.end("name")))
    for m in _GREETING.finditer(text):
        name = m.group("name")
        keys = [w.casefold() for w in name.split()]
        plain = english and not m.group("hello") and all(  # "Update -", "Note," open a paragraph: no greeting
            k in english and k not in known_first_names and k not in word_names for k in keys)
        if not plain and _addressee(name) and _is_name(name, known_first_names, not_names, lower_ok=True,
                                                       any_word=bool(english) and keys[0] not in english,
                                                       also=word_names):
            spans.append(("PERSON", m.start("name"), m.end("name")))
    for m in _cues(_STRONG_CUE, text):
        if _is_name(m.group("name"), known_first_names, not_names, lower_ok=True, any_word=True):
            end = m.end("last") if m.group("last") and _is_name(
                m.group("last"), known_first_names, not_names, lower_ok=True, any_word=True) else m.end("name")
            spans.append(("PERSON", m.start("name"), end))
    for m in _cues(_WEAK_CUE, text):
        name, last = m.group("name"), m.group("last")
        uncased = _is_uncased(name)
        if (name.casefold() in known_first_names or uncased) and name.casefold() not in not_names:
            keep_last = last and (last[0].isupper() and last[1:].islower() or uncased and _is_uncased(last))
            spans.append(("PERSON", m.start("name"), m.end("last") if keep_last else m.end("name")))
    uncased = len(_UNCASED_LETTER.findall(text))
    if uncased and len(_LETTER.findall(text)) - uncased > 2 * uncased:
        # a text in a cased script (Latin, Cyrillic, Greek): a run of words of a script without case in it is
        # taken as a name ("on behalf of 王秀英", "Note from สมชาย ใจดี"): capitalisation cannot tell, and
        # treating it as one errs on the side of the person (a quoted foreign phrase is replaced too)
        spans += [("PERSON", *m.span()) for m in _UNCASED_RUN.finditer(text)]
    turns = [m for m in _TURN.finditer(text) if m.group("label").casefold() not in _FIELD_LABELS]
    if len(turns) >= 2 and 2 * len(turns) >= sum(1 for line in text.splitlines() if line.strip()):  # a chat
        labels = Counter(m.group("label").casefold() for m in turns)
        for m in turns:
            label = m.group("label")
            if _ROLE.fullmatch(label):
                protected.append(m.span("label"))
            elif _speaker(label, labels[label.casefold()], not_names):
                spans.append(("PERSON", m.start("label"), m.end("label")))
            stage = _STAGE.match(text, m.end())
            word = stage and next(g for g in ("p", "a") if stage.group(g))
            if word and stage.group(word).casefold() not in known_first_names:
                protected.append(stage.span(word))
        spans += [("PERSON", *m.span("name")) for m in _SIGN_IN.finditer(text)
                  if m.group("name").casefold() not in not_names]
    return Structure(spans, protected)


def _speaker(label: str, turns: int, not_names: frozenset[str]) -> bool:
    """A chat turn's label (no role) names its speaker: a word that is never a name elsewhere ("Mark", "grace",
    "Christian" are also a verb, a word and a faith) is one in this place when it labels two turns or more and
    is no stop, greeting, chat, calendar, form or kinship word. A label without a letter ("0:", "12:") names no
    one: a numbered list's item, not a speaker."""
    if not _WORDS.search(label):
        return False
    if label.casefold() not in not_names:
        return True
    return turns >= 2 and not any(w in _never_speakers() or is_calendar_word(w) for w in label.casefold().split())


@lru_cache(maxsize=1)
def _never_speakers() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS  # gazetteers.stop_words (gazetteers imports this module)

    return frozenset({*STOP_WORDS, *(w.casefold() for w in NOT_NAMES), *_SLANG, *_FORM_LABELS, *_KINSHIP})


def public_addresses(text: str) -> frozenset[str]:
    """The casefolded addresses in ``text`` that are a list's or a role's, no person's: a role mailbox or list
    command (``_ROLE_LOCAL``), an organisation's sender (``_SENDER_LOCAL``: "sales2@", "offers726@") at no
    free-mail host, an address at a list host (``_LIST_HOST``), one a list footer gives (``_FOOTER_CUE``
    right before it, on its line or the line above), and a list's own address when the text holds one of its
    command addresses ("users@host" beside "users-unsubscribe@host")."""
    out, lists, seen = set(), set(), set()
    for m in re.finditer(_ADDRESS, text):
        local, _, host = m.group().rpartition("@")
        seen.add(m.group().casefold())
        line_above = text.rfind("\n", 0, max(0, text.rfind("\n", 0, m.start())))
        if _ROLE_LOCAL.fullmatch(local) or _LIST_HOST.fullmatch(host) or _FOOTER_CUE.search(
                text, max(0, line_above), m.start()) or (  # from the line break before: "^" matches only at 0
                _SENDER_LOCAL.fullmatch(local) and not _FREE_MAIL.fullmatch(host)):
            out.add(m.group().casefold())
        command = _COMMAND_ADDRESS.fullmatch(local)
        if command:
            lists.add(f"{command.group('list')}@{host}".casefold())
    return frozenset(out | (lists & seen))


def _public_regions(text: str, public: frozenset[str]) -> list[tuple[int, int]]:
    """Every occurrence of a ``public`` address, a list's name before "mailing list", a list's web page, a
    software header's line and a number called toll-free (``_TOLL_FREE``)."""
    out = [m.span() for m in re.finditer(_ADDRESS, text) if m.group().casefold() in public]
    out += [m.span("list") for m in _LIST_NAME.finditer(text) if len(m.group("list").split()) <= 3]
    out += [m.span() for rx in (_LIST_PAGE, _SOFTWARE_HEADER) for m in rx.finditer(text)]
    out += [m.span("cued") for m in _TOLL_FREE.finditer(text)]
    return out


def _calendar_numbers(value: str) -> bool:
    """False for a dotted or slashed all-number "date" no calendar has ("5.0.2195" is a version): day 1-31
    and month 1-12 in some order."""
    parts = re.fullmatch(r"(\d{1,2})[./](\d{1,2})[./]\d{2,4}", value.strip())
    if not parts:
        return True
    a, b = int(parts[1]), int(parts[2])
    return 1 <= a <= 31 and 1 <= b <= 12 or 1 <= a <= 12 and 1 <= b <= 31


def _is_uncased(word: str) -> bool:
    """The word opens with a letter of a script without case (Han, Thai, Arabic, ...)."""
    return bool(word) and unicodedata.category(word[0]) == "Lo"


def is_slang(word: str) -> bool:
    """A chat word or interjection ("ok", "yeah", "nice"), laughter included."""
    return word.casefold() in _SLANG or _LAUGHTER.fullmatch(word) is not None


def is_calendar_word(word: str) -> bool:
    """A weekday, month or time-zone name ("Sun", "May", "EDT")."""
    return word.casefold() in _CALENDAR_WORDS


def _addressee(value: str) -> bool:
    """Not a group ("all", "folks") nor a sign-off phrase ("Best Regards", "Cheers")."""
    return value.split()[-1].casefold() not in _GROUPS and not re.fullmatch(_SIGN_OFF, value, re.IGNORECASE)


def _cues(rx: re.Pattern, text: str):
    """The matches of a name cue, each searched again from its name word, so the name word of a rejected
    match can open the next ("hi, this is mike")."""
    m = rx.search(text)
    while m:
        yield m
        m = rx.search(text, m.start("name"))


def _zones_and_noise(text: str) -> list[tuple[int, int]]:
    out = [m.span() for m in _ZONE_ALONE.finditer(text)]
    out += [m.span(next(g for g in ("v", "before", "long") if m.group(g))) for m in _VERSION.finditer(text)]
    out += [m.span() for m in _LAUGHTER.finditer(text)]
    return out


def _inside(region: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(s <= region[0] and region[1] <= e for s, e in spans)


def _address_list(text: str, start: int, end: int, public: frozenset[str] = frozenset(),
                  known: frozenset[str] = frozenset()) -> list[tuple[str, int, int]]:
    """PERSON and EMAIL_ADDRESS spans of a header's address list (``text[start:end]``): each entry's address
    and display name, and the names between entries ("Smith, John <j@x>": "Smith" too). A ``public`` address
    (a list's, a role's) is no value, nor its display name ("Weekly Tech News", kind "PUBLIC": protected by the
    caller) unless that holds a ``known`` first name."""
    out, pos = [], start
    for m in _ENTRY.finditer(text, start, end):
        out += _names_between(text, pos, m.start())
        address = next(g for g in ("a1", "a2", "a3") if m.group(g))
        listed = m.group(address).casefold() in public
        if not listed:
            out.append(("EMAIL_ADDRESS", m.start(address), m.end(address)))
        for group in ("name", "comment"):
            name = _trimmed(text, m.start(group), m.end(group)) if m.group(group) is not None else None
            if name:
                nobody = listed and not any(w.casefold() in known for w in _WORDS.findall(text[name[0]:name[1]]))
                out.append(("PUBLIC" if nobody else "PERSON", *name))
        pos = m.end()
    return out + _names_between(text, pos, end)


def _names_between(text: str, start: int, end: int) -> list[tuple[str, int, int]]:
    """Comma- or semicolon-separated names without digits in ``text[start:end]``."""
    out = []
    for part in re.finditer(r"[^,;\n]+", text[start:end]):
        name = _trimmed(text, start + part.start(), start + part.end())
        if name and not any(c.isdigit() or c in "@<>[]()" for c in text[name[0]:name[1]]):
            out.append(("PERSON", *name))
    return out


def _trimmed(text: str, start: int, end: int, digits: bool = False) -> tuple[int, int] | None:
    """``[start, end)`` without blanks, quotes and punctuation around it; None when no letter (or, with
    ``digits``, no digit either) is left."""
    edge = _EDGE + ("" if digits else "()")
    while start < end and text[start] in edge:
        start += 1
    while end > start and text[end - 1] in edge:
        end -= 1
    value = text[start:end]
    return (start, end) if any(c.isalpha() or (digits and c.isdigit()) for c in value) else None


def _attribution(text: str, start: int, end: int, not_names: frozenset[str], public: frozenset[str] = frozenset(),
                 known: frozenset[str] = frozenset()) -> list[tuple[str, int, int]]:
    """The date and the writer of a quote attribution's body ``text[start:end]`` ("In message <id>, X writes:":
    the writer after the message id)."""
    pos = start
    cited = _IN_MESSAGE.match(text, pos, end)
    if cited:
        pos = cited.end()
    lead = _LEAD.match(text, pos, end)
    if lead:
        pos = lead.end()
        date = _DATE.match(text, pos, end)
        while date:  # "At 10:12 AM 8/14/2002 -0400": a time, then a date
            pos = date.end()
            date = _DATE.match(text, pos + len(text[pos:end]) - len(text[pos:end].lstrip(" \t")), end)
        if pos == lead.end():
            return []
    if "@" in text[pos:end]:
        return _address_list(text, pos, end, public, known)
    name = _trimmed(text, pos, end)
    if name is None:
        return []
    words = text[name[0]:name[1]].split()
    if len(words) > 5 or not any(w[0].isupper() and w.strip(",.") not in not_names
                                 for w in words) or "(" in text[pos:end]:
        return []
    return [("PERSON", *name)]


def _is_name(value: str, known: frozenset[str], not_names: frozenset[str], lower_ok: bool,
             any_word: bool = False, also: frozenset[str] = frozenset()) -> bool:
    """A name line or cue word: capitalised words, the first not a form word (but for a given name of ``also``:
    "Mark", "Will" where a name is written); or lower case when it is a known first name (or, after a strong cue,
    ``any_word`` not a common word)."""
    words = value.split()
    first = words[0].strip(".")
    key = first.casefold()
    if len(first) < 2 or key not in also and (
            key in not_names or key in _CALENDAR_WORDS or key in _SLANG or key in _KINSHIP
            or RELATIVE_TIME.match(first) or _LAUGHTER.fullmatch(first)):
        return False
    if all(w[0].isupper() or _is_uncased(w) for w in words):
        return True
    return lower_ok and (key in known or key in also or any_word) and len(words) == 1


def apply(spans: list, structure: Structure, text: str) -> list:
    """``spans`` (``detect.Span``) cut out of the protected regions and the structure's date spans, without
    spans that cannot be entities; the structure's own spans are added by the caller."""
    blocked = sorted([*structure.protected, *((s, e) for k, s, e in structure.spans if k == "DATE_TIME")])
    out = []
    for span in spans:
        piece = _outside(span.start, span.end, blocked)
        if piece != (span.start, span.end):
            piece = piece and span.entity_type != "DATE_TIME" and _trimmed(text, *piece, digits=True)
            if not piece:
                continue  # a DATE_TIME overlapping the structure's date: the structure's span owns the date
            span = replace(span, start=piece[0], end=piece[1])
        span = _without_slang(span, text)
        if span and _valid(span, text):
            out.append(span)
    return out


_NAME_TYPES = ("PERSON", "LOCATION", "ORGANIZATION", "NRP", "TITLE")
_SPAN_WORD = re.compile(r"[^\W_][\w'’-]*")


def _without_slang(span, text: str):
    """A name, place, organisation, group or title without the chat words at its edges ("Ulta FTW" -> "Ulta",
    "Hey Bob" -> "Bob", "Bob lol" -> "Bob"); None when nothing else is left. A Title-case word at the end stays
    ("Sarah Good": "good" is a chat word and a surname)."""
    words = list(_SPAN_WORD.finditer(text, span.start, span.end)) if span.entity_type in _NAME_TYPES else []
    first, last = 0, len(words)
    while first < last and is_slang(words[first].group()):
        first += 1
    while last > first and is_slang(words[last - 1].group()) and not words[last - 1].group().istitle():
        last -= 1
    if (first, last) == (0, len(words)):
        return span
    return replace(span, start=words[first].start(), end=words[last - 1].end()) if first < last else None


def _outside(start: int, end: int, blocked: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The longest piece of ``[start, end)`` outside ``blocked`` (None when nothing is left)."""
    pieces, pos = [], start
    for s, e in blocked:
        if e <= pos or s >= end:
            continue
        if s > pos:
            pieces.append((pos, s))
        pos = max(pos, e)
    if pos < end:
        pieces.append((pos, end))
    return max(pieces, key=lambda p: p[1] - p[0], default=None)


def _valid(span, text: str) -> bool:
    value = text[span.start:span.end]
    core = value.strip(" \t\n.,;:!?-()[]{}<>\"'")
    if not any(c.isalnum() for c in core):
        return False
    if span.entity_type == "STREET_ADDRESS" and not _LETTER.search(core):
        return False  # an address has a street word: a bare number ("we're like 3", "x 5 = 15") is none
    if span.entity_type in ("PERSON", "LOCATION", "ORGANIZATION", "NRP", "TITLE") and (
            core.casefold() in _CALENDAR_WORDS or core.casefold() in _FORM_LABELS or core.casefold() in _KINSHIP
            or RELATIVE_TIME.match(core) or _CODE.fullmatch(core)
            or core.isupper() and all(w in _NOT_ORG_WORDS for w in re.findall(r"[\w-]+", core.casefold()))):
        return False  # ... or a shouted mail word ("LIMITED TIME OFFER" as a place)
    if span.entity_type in ("PERSON", "LOCATION", "ORGANIZATION", "NRP") and re.fullmatch(
            _SIGN_OFF + "|ta|dear[ \t]+\\w+", core, re.IGNORECASE):
        return False  # "Cheers,\nmichael": the sign-off is no name, company or place
    if span.entity_type == "ORGANIZATION" and all(w in _NOT_ORG_WORDS for w in re.findall(r"[\w-]+", core.casefold())):
        return False
    if span.entity_type == "EMAIL_ADDRESS" and re.search(r"[/?=&]", value.rpartition("@")[0]):
        return False  # an address in a URL's query ("/unsubscribe?id=..&email=x@y"): the whole URL is the value
    if span.entity_type == "URL":
        glued = span.end < len(text) and text[span.end].isalnum() or span.start > 0 and text[span.start - 1].isalnum()
        bare_file = not _URL_PARTS.search(value) and value.rsplit(".", 1)[-1].lower() in _FILE_TLDS
        return not (glued or ".." in value or "\u2026" in value or bare_file)
    return True

