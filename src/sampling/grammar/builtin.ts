// Ready-made grammars, equivalent to llama.cpp's grammars/json.gbnf and json_arr.gbnf
// (same language: JSON with at most one space or one newline plus up to 20 blanks of
// indentation between tokens, numbers of at most 16 digits).

const JSON_COMMON = String.raw`value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::= "{" ws ( member ( "," ws member )* )? "}" ws
member ::= string ":" ws value
array  ::= "[" ws ( value ( "," ws value )* )? "]" ws

string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" escape )* "\"" ws
escape ::= ["\\/bfnrt] | "u" [0-9a-fA-F]{4}

# no leading zeros; the exponent as llama.cpp writes it
number ::= "-"? ( [0-9] | [1-9] [0-9]{0,15} ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9] [1-9]{0,15} )? ws

# optional blank after a token: nothing, a space, or a newline and some indentation
ws     ::= | " " | "\n" [ \t]{0,20}
`;

/** A JSON object (llama.cpp's json.gbnf). */
export const JSON_GBNF = `# a JSON object\nroot   ::= object\n${JSON_COMMON}`;

/** A JSON array, one value per line (llama.cpp's json_arr.gbnf). */
export const JSON_ARRAY_GBNF = `# a JSON array, one value per line\nroot   ::= "[\\n" ws ( value ( ",\\n" ws value )* )? "]"\n${JSON_COMMON}`;

/** Any JSON value. */
export const JSON_VALUE_GBNF = `# any JSON value\nroot   ::= value\n${JSON_COMMON}`;
