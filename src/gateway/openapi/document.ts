/**
 * The parts of an OpenAPI 3.0/3.1 document the importer reads, after every `$ref` was resolved
 * (load.ts). Written loosely on purpose: the document is validated by swagger-parser, and what is
 * read here is only what becomes a tool.
 */
export type JsonSchema = Record<string, unknown>;

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  description?: string;
  required?: boolean;
  schema?: JsonSchema;
  content?: Record<string, { schema?: JsonSchema }>;
  style?: string;
  explode?: boolean;
}

export interface RequestBody {
  description?: string;
  required?: boolean;
  content?: Record<string, { schema?: JsonSchema }>;
}

export type SecurityRequirement = Record<string, string[]>;

export interface SecurityScheme {
  type: 'http' | 'apiKey' | 'oauth2' | 'openIdConnect' | 'mutualTLS';
  scheme?: string;
  name?: string;
  in?: 'header' | 'query' | 'cookie';
}

export interface Server {
  url: string;
  variables?: Record<string, { default: string }>;
}

export interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: RequestBody;
  security?: SecurityRequirement[];
  servers?: Server[];
  callbacks?: Record<string, unknown>;
  deprecated?: boolean;
}

export interface PathItem extends Partial<Record<HttpMethodName, Operation>> {
  parameters?: Parameter[];
  servers?: Server[];
}

export type HttpMethodName = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace';

export const HTTP_METHOD_NAMES: readonly HttpMethodName[] = [
  'get',
  'put',
  'post',
  'delete',
  'options',
  'head',
  'patch',
  'trace',
];

export interface OpenApiDocument {
  openapi: string;
  servers?: Server[];
  paths?: Record<string, PathItem>;
  webhooks?: Record<string, PathItem>;
  security?: SecurityRequirement[];
  components?: { securitySchemes?: Record<string, SecurityScheme> };
}
