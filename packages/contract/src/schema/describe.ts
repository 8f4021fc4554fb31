/**
 * An ajv error in words: apart from the validators and the YAML parser, so that code which only reports a schema
 * error (the Control API client, the server's request checks) does not load them.
 */
export interface AjvError {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/**
 * What an ajv error expects, in words (shared with the Control API's request validation); `suggestion` is the known
 * key or allowed value nearest to what was given, when there is one.
 */
export function describeSchemaError(error: AjvError, suggestion?: string): string {
  const p = error.params;
  const meant = suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`;
  switch (error.keyword) {
    case 'additionalProperties':
      return `has an unknown field ${JSON.stringify(String(p.additionalProperty).slice(0, 64))}${meant}`;
    case 'required':
      return `is missing the required field "${String(p.missingProperty)}"`;
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}${meant}`;
    case 'propertyNames':
      return `has an unknown key ${JSON.stringify(String(p.propertyName).slice(0, 64))}${meant}`;
    default:
      return error.message ?? 'is invalid';
  }
}
