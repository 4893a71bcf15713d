import { describe, expect, it } from 'vitest';
import { CommandTemplate } from './command-template.js';

describe('command templates: where a placeholder may stand', () => {
  it('refuses a placeholder where its quoted word would not stay one word', () => {
    const refused: [string, RegExp][] = [
      ["echo '{{v}}'", /inside single quotes/],
      ['echo "{{v}}"', /inside double quotes/],
      ['echo "x $(cat {{v}})"', /inside double quotes/],
      ['echo `cat {{v}}`', /inside backticks/],
      ['echo \\{{v}}', /inside a backslash escape/],
      ['true # {{v}}', /inside a comment/],
      ['cat <<EOF\n{{v}}\nEOF', /here-document/],
      ["echo 'it''s' \"{{v}}\"", /inside double quotes/],
    ];
    for (const [template, reason] of refused) {
      expect(() => new CommandTemplate(template), template).toThrow(reason);
    }
  });

  it('accepts bare placeholders, also beside quoted text, in $(…), after a comment line and glued to text', () => {
    for (const template of [
      'echo \'x\' {{v}} "y"',
      'echo $(basename {{v}})',
      '# restart\nsystemctl restart {{v}}',
      'deploy --name={{v}} /srv/{{v}}.conf',
    ]) {
      expect(new CommandTemplate(template).placeholders).toEqual(['v']);
    }
    expect(new CommandTemplate('a#b {{v}}').render({ v: 'x y' })).toBe("a#b 'x y'");
  });

  it('renders each argument as one quoted word', () => {
    const template = new CommandTemplate('deploy -- {{service}} {{version}}');
    expect(template.render({ service: 'api; reboot', version: 7 })).toBe("deploy -- 'api; reboot' 7");
  });
});
